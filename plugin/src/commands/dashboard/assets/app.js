// kubectl promotion dashboard: keeps the server-rendered page live (server-sent events), filters
// the fleet, and sends the actions. Everything shown is rendered by the server; this script only
// puts it in place. No inline script: the Content-Security-Policy allows this file alone.
"use strict";

(function () {
  const live = document.getElementById("live");
  const result = document.getElementById("result");

  function setLive(state, text) {
    live.textContent = text;
    live.dataset.state = state;
  }

  // ---- fleet filter: by name or label text, and by phase; kept in the address ----
  const q = document.getElementById("q");
  const phase = document.getElementById("phase");
  function applyFilter() {
    const fleet = document.getElementById("fleet");
    if (!fleet) return;
    const text = (q ? q.value : "").trim().toLowerCase();
    const want = phase ? phase.value : "";
    let shown = 0;
    for (const card of fleet.children) {
      const hay = (card.dataset.name + " " + card.dataset.labels).toLowerCase();
      const ok = (!text || text.split(/\s+/).every((w) => hay.includes(w))) &&
        (!want || card.dataset.phase === want);
      card.hidden = !ok;
      if (ok) shown++;
    }
    const counter = document.getElementById("shown");
    if (counter) counter.textContent = shown + " of " + fleet.children.length + " promotions";
    const params = new URLSearchParams(location.search);
    if (text) params.set("q", text); else params.delete("q");
    if (want) params.set("phase", want); else params.delete("phase");
    const query = params.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : ""));
  }
  if (q && phase) {
    const params = new URLSearchParams(location.search);
    q.value = params.get("q") || "";
    phase.value = params.get("phase") || "";
    q.addEventListener("input", applyFilter);
    phase.addEventListener("change", applyFilter);
    document.getElementById("filter").addEventListener("submit", (e) => e.preventDefault());
    applyFilter();
  }
  // "/" focuses the filter, as in most list UIs.
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && q && document.activeElement !== q &&
        !(document.activeElement && /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName))) {
      e.preventDefault();
      q.focus();
    }
  });

  function fromHtml(html) {
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  // ---- live updates ----
  function placeCard(data) {
    const fleet = document.getElementById("fleet");
    if (!fleet) return;
    const card = fromHtml(data.html);
    const old = document.getElementById(data.id);
    if (old) {
      old.replaceWith(card);
    } else {
      // Sorted by name, as the server renders them.
      let before = null;
      for (const c of fleet.children) {
        if (c.dataset.name > data.name) { before = c; break; }
      }
      fleet.insertBefore(card, before);
      const empty = document.getElementById("empty");
      if (empty) empty.remove();
    }
    applyFilter();
  }

  // The promotion page's live part is replaced whole; what the user was typing and which
  // sections were folded survive it.
  function replacePage(html) {
    const main = document.getElementById("content");
    const typed = {};
    for (const input of main.querySelectorAll("input[id]")) typed[input.id] = input.value;
    const focused = document.activeElement && document.activeElement.id;
    const closed = [...main.querySelectorAll("details[id]:not([open])")].map((d) => d.id);
    main.innerHTML = html;
    for (const [id, value] of Object.entries(typed)) {
      const input = document.getElementById(id);
      if (input) input.value = value;
    }
    for (const id of closed) {
      const d = document.getElementById(id);
      if (d) d.open = false;
    }
    if (focused) {
      const again = document.getElementById(focused);
      if (again) again.focus();
    }
    bindActions();
  }

  const stream = document.body.dataset.stream;
  if (stream) {
    const source = new EventSource(stream);
    source.addEventListener("open", () => {
      if (live.dataset.state !== "live") setLive("live", "live");
    });
    source.addEventListener("error", () => {
      setLive("disconnected", "disconnected from the dashboard (is it still running?); reconnecting…");
    });
    source.addEventListener("status", (e) => {
      const s = JSON.parse(e.data);
      setLive(s.state, s.text);
    });
    source.addEventListener("card", (e) => placeCard(JSON.parse(e.data)));
    source.addEventListener("gone", (e) => {
      const old = document.getElementById(JSON.parse(e.data).id);
      if (old) old.remove();
      applyFilter();
    });
    source.addEventListener("keep", (e) => {
      const names = new Set(JSON.parse(e.data).names);
      const fleet = document.getElementById("fleet");
      if (!fleet) return;
      for (const c of [...fleet.children]) if (!names.has(c.dataset.name)) c.remove();
      applyFilter();
    });
    source.addEventListener("page", (e) => replacePage(JSON.parse(e.data).html));
  }

  // ---- actions: confirm what will happen, send the form, show the command's answer ----
  function show(ok, message, notes) {
    result.hidden = false;
    result.className = ok ? "ok" : "failed";
    result.textContent = "";
    const line = document.createElement("p");
    line.textContent = message;
    result.appendChild(line);
    if (notes) {
      const pre = document.createElement("pre");
      pre.textContent = notes;
      result.appendChild(pre);
    }
  }

  function bindActions() {
    for (const form of document.querySelectorAll("form.action")) {
      if (form.dataset.bound) continue;
      form.dataset.bound = "1";
      form.addEventListener("submit", async (e) => {
        e.preventDefault();
        if (!window.confirm(form.dataset.confirm)) return;
        const button = form.querySelector("button");
        button.disabled = true;
        try {
          const response = await fetch(form.action, {
            method: "POST",
            headers: { "Content-Type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams(new FormData(form)).toString(),
            credentials: "same-origin",
          });
          const type = response.headers.get("content-type") || "";
          if (type.startsWith("application/json")) {
            const answer = await response.json();
            show(answer.ok, answer.message, answer.notes);
          } else {
            show(false, "refused (" + response.status + "): " + (await response.text()).replace(/<[^>]*>/g, " ").trim(), "");
          }
        } catch (err) {
          show(false, "the dashboard did not answer: " + err, "");
        } finally {
          button.disabled = false;
        }
      });
    }
  }
  bindActions();
})();
