//! The pages, rendered on the server from the view models ([`super::model`]): plain HTML that
//! reads without the script, which only keeps it live and sends the actions. Every text from the
//! cluster goes through [`esc`].

use std::fmt::Write as _;

use super::model::{Action, Card, PromotionPage, StageBox};
use crate::view::StageDetail;

/// At most this many clusters are listed per stage (failing ones first); `describe` lists all.
pub const CLUSTERS_SHOWN: usize = 200;

/// Text for HTML element content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The element id of a promotion's card (names are DNS subdomains: safe as ids once escaped).
pub fn card_id(name: &str) -> String {
    format!("p-{name}")
}

/// A whole page: `stream` is the event stream that keeps `<main>` live.
fn layout(title: &str, stream: &str, context: &str, main: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n<title>{title}</title>\n\
         <link rel=\"stylesheet\" href=\"/assets/style.css\">\n\
         <script src=\"/assets/app.js\" defer></script>\n</head>\n\
         <body data-stream=\"{stream}\">\n<a class=\"skip\" href=\"#content\">Skip to content</a>\n\
         <header><nav><a href=\"/\" class=\"home\">ClusterPromotions</a> <span class=\"context\">{context}</span></nav>\n\
         <p id=\"live\" class=\"live\" role=\"status\" aria-live=\"polite\">connecting…</p></header>\n\
         <div id=\"result\" role=\"alert\" aria-live=\"assertive\"></div>\n{main}\n</body>\n</html>\n",
        title = esc(title),
        stream = esc(stream),
        context = esc(context),
    )
}

/// The fleet page: every promotion as a pipeline, with a filter.
pub fn fleet_page(cards: &[Card], context: &str, seq: u64) -> String {
    let mut main = String::from(
        "<main id=\"content\">\n<form class=\"filter\" role=\"search\" id=\"filter\">\
         <label>Filter <input id=\"q\" name=\"q\" type=\"search\" autocomplete=\"off\" \
         placeholder=\"name or label (press /)\"></label> \
         <label>Phase <select id=\"phase\" name=\"phase\"><option value=\"\">any</option>",
    );
    for phase in PHASES {
        let _ = write!(main, "<option>{}</option>", esc(phase));
    }
    let _ = write!(
        main,
        "</select></label> <span id=\"shown\">{} promotions</span></form>\n\
         <ol id=\"fleet\" class=\"fleet\">\n",
        cards.len()
    );
    for c in cards {
        main.push_str(&card(c));
    }
    main.push_str("</ol>\n");
    if cards.is_empty() {
        main.push_str(
            "<p id=\"empty\" class=\"dim\">No ClusterPromotions found: they appear here when \
             created.</p>\n",
        );
    }
    main.push_str("</main>");
    layout(
        "ClusterPromotions",
        &format!("/stream?since={seq}"),
        context,
        &main,
    )
}

/// The phases the filter offers, as the CLI names them.
const PHASES: &[&str] = &[
    "not started",
    "progressing",
    "awaiting approval",
    "degraded",
    "failed",
    "complete",
    "paused",
    "aborted",
    "rolling back",
    "rolled back",
    "change not picked up yet",
    "blocked",
    "being deleted",
    "unknown",
];

/// One promotion's card (an `<li>` the stream replaces whole).
pub fn card(c: &Card) -> String {
    let labels: Vec<String> = c.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut out = format!(
        "<li id=\"{id}\" class=\"card\" data-name=\"{name}\" data-labels=\"{labels}\" \
         data-phase=\"{phase}\">\n<h2><a href=\"/promotions/{name}\">{name}</a> \
         <span class=\"phase {tone}\">{phase}</span></h2>\n",
        id = esc(&card_id(&c.name)),
        name = esc(&c.name),
        labels = esc(&labels.join(" ")),
        phase = esc(c.phase),
        tone = c.phase_tone,
    );
    out.push_str(&pipeline(&c.stages));
    if let Some(gate) = &c.gate {
        let _ = writeln!(
            out,
            "<p class=\"gate waiting\">Awaiting approval: {}</p>",
            esc(gate)
        );
    }
    if let Some(b) = &c.blocked {
        let _ = writeln!(out, "<p class=\"blocked bad\">{}</p>", esc(b));
    }
    if let Some(m) = &c.message {
        let _ = writeln!(out, "<p class=\"message\">{}</p>", esc(m));
    }
    if let Some(n) = &c.next_step {
        let _ = writeln!(out, "<p class=\"next\">Next: <code>{}</code></p>", esc(n));
    }
    let _ = write!(
        out,
        "<p class=\"meta dim\">Reconciled by {}",
        esc(&c.reconciled_by)
    );
    if !labels.is_empty() {
        let _ = write!(out, " · {}", esc(&labels.join(", ")));
    }
    if let Some(t) = &c.changed {
        let _ = write!(
            out,
            " · changed <time datetime=\"{t}\">{t}</time>",
            t = esc(t)
        );
    }
    out.push_str("</p>\n</li>\n");
    out
}

/// The stage boxes, in order.
fn pipeline(stages: &[StageBox]) -> String {
    let mut out = String::from("<ol class=\"pipeline\">");
    for s in stages {
        let _ = write!(
            out,
            "<li class=\"stage {tone}{current}\" data-stage=\"{name}\" data-state=\"{state}\">\
             <span class=\"symbol\" aria-hidden=\"true\">{symbol}</span> \
             <span class=\"name\">{name}</span> <span class=\"trigger dim\">{trigger}</span>\
             <span class=\"state\">{state}</span>",
            tone = s.tone,
            current = if s.current { " current" } else { "" },
            name = esc(&s.name),
            state = esc(&s.state),
            symbol = s.symbol,
            trigger = s.trigger,
        );
        if let Some(c) = &s.clusters {
            let _ = write!(out, "<span class=\"clusters\">{}</span>", esc(c));
        }
        out.push_str("</li>");
    }
    out.push_str("</ol>\n");
    out
}

/// The promotion page.
pub fn promotion_page(page: &PromotionPage, context: &str, seq: u64) -> String {
    let name = &page.card.name;
    let main = format!(
        "<main id=\"content\" data-name=\"{}\">{}</main>",
        esc(name),
        promotion_body(page)
    );
    layout(
        &format!("{name} · ClusterPromotion"),
        &format!("/promotions/{name}/stream?since={seq}"),
        context,
        &main,
    )
}

/// The live part of the promotion page (what its stream replaces).
pub fn promotion_body(page: &PromotionPage) -> String {
    let d = &page.description;
    let c = &page.card;
    let mut out = format!(
        "<h1>{name} <span class=\"phase {tone}\" id=\"phase\">{phase}</span></h1>\n",
        name = esc(&c.name),
        tone = c.phase_tone,
        phase = esc(c.phase),
    );
    out.push_str(&pipeline(&c.stages));
    out.push_str("<dl class=\"facts\">\n");
    let mut fact = |k: &str, v: &str| {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    };
    fact("Reconciled by", &d.reconciled_by);
    if let Some(b) = &d.reconciler_blocked {
        fact("Reconciler", &format!("{}: {}", b.problem, b.fix));
    }
    if let Some(stage) = &d.current_stage {
        fact("Current stage", stage);
    }
    if let Some(t) = &d.last_promotion_time {
        fact("Last promotion", t);
    }
    if let Some(p) = &d.paused {
        fact("Paused", &p.explain(&d.name));
    }
    if let Some(a) = &d.aborted {
        fact("Aborted", &a.explain(&d.name));
    }
    if let Some(m) = &c.message {
        fact("Message", m);
    }
    if let Some(n) = &d.next_step {
        fact("Next step", n);
    }
    let deploys = deploys_text(&d.deploys);
    if !deploys.is_empty() {
        fact("Deploys", &deploys);
    }
    if let Some(r) = &d.last_spec_change {
        let unseen = if d.spec_change_unseen {
            " (the change that started this rollout was made without the webhook: who made it is              not known)"
        } else {
            ""
        };
        fact(
            "Spec changed",
            &format!("by {} at {}{unseen}", r.user, r.time),
        );
    }
    fact("On delete", &d.on_delete);
    out.push_str("</dl>\n");
    if !page.read_only {
        out.push_str(&actions(&c.name, &page.actions));
    }
    for w in &d.warnings {
        let _ = writeln!(out, "<p class=\"warning waiting\">{}</p>", esc(w));
    }
    out.push_str("<section id=\"stages\"><h2>Stages</h2>\n");
    for s in &d.stages {
        out.push_str(&stage(s));
    }
    out.push_str("</section>\n");
    out.push_str(&approvals(d));
    out.push_str("<section id=\"history\"><h2>Revisions</h2>\n");
    match &page.history {
        Ok(rows) if rows.is_empty() => out.push_str(
            "<p class=\"dim\">No rollout history recorded (promotion-controller records one \
             revision per rollout).</p>\n",
        ),
        Ok(rows) => {
            out.push_str(
                "<table><thead><tr><th>Revision</th><th>Started</th><th>By</th><th>Outcome</th>\
                 <th>Reached</th><th>Change</th></tr></thead><tbody>\n",
            );
            for r in rows {
                out.push_str("<tr>");
                for cell in r.cells() {
                    let _ = write!(out, "<td>{}</td>", esc(&cell));
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</tbody></table>\n");
        }
        Err(why) => {
            let _ = writeln!(out, "<p class=\"dim\">Not readable: {}</p>", esc(why));
        }
    }
    out.push_str("</section>\n<section id=\"timeline\"><h2>Timeline</h2>\n");
    match &page.timeline {
        Ok(text) => {
            let _ = writeln!(out, "<pre>{}</pre>", esc(text));
        }
        Err(why) => {
            let _ = writeln!(out, "<p class=\"dim\">{}</p>", esc(why));
        }
    }
    out.push_str("</section>\n<section id=\"events\"><h2>Events</h2>\n");
    match &d.events {
        Some(events) if !events.is_empty() => {
            out.push_str(
                "<table><thead><tr><th>Type</th><th>Reason</th><th>Age</th><th>From</th>\
                 <th>Message</th></tr></thead><tbody>\n",
            );
            for e in events.iter().rev() {
                let _ = writeln!(
                    out,
                    "<tr class=\"{cls}\"><td>{kind}</td><td>{reason}</td><td><time>{time}</time></td>\
                     <td>{source}</td><td>{message}{count}</td></tr>",
                    cls = if e.kind == "Warning" { "waiting" } else { "" },
                    kind = esc(&e.kind),
                    reason = esc(&e.reason),
                    time = esc(e.time.as_deref().unwrap_or("")),
                    source = esc(e.source.as_deref().unwrap_or("")),
                    message = esc(&e.message),
                    count = if e.count > 1 {
                        format!(" (×{})", e.count)
                    } else {
                        String::new()
                    },
                );
            }
            out.push_str("</tbody></table>\n");
        }
        Some(_) => out.push_str("<p class=\"dim\">No events.</p>\n"),
        None => out.push_str("<p class=\"dim\">Events were not readable.</p>\n"),
    }
    out.push_str("</section>\n");
    out
}

fn deploys_text(d: &promotion_shared::revision::Deploys) -> String {
    let mut parts: Vec<String> = d.helm_charts.clone();
    parts.extend(d.policy_refs.iter().cloned());
    parts.extend(d.kustomization_refs.iter().cloned());
    parts.join(", ")
}

/// The action forms; a refused one is shown disabled with its reason.
fn actions(name: &str, actions: &[Action]) -> String {
    if actions.is_empty() {
        return String::new();
    }
    let mut out = String::from("<section id=\"actions\" class=\"actions\"><h2>Actions</h2>\n");
    for (i, a) in actions.iter().enumerate() {
        let id = format!(
            "action-{}-{}",
            a.kind.path(),
            a.stage.as_deref().unwrap_or("")
        );
        let _ = write!(
            out,
            "<form class=\"action\" method=\"post\" action=\"/promotions/{name}/{path}\" \
             data-confirm=\"{confirm}\" id=\"{id}\">",
            name = esc(name),
            path = a.kind.path(),
            confirm = esc(&a.confirm),
            id = esc(&id),
        );
        if let Some(stage) = &a.stage {
            let _ = write!(
                out,
                "<input type=\"hidden\" name=\"stage\" value=\"{}\">",
                esc(stage)
            );
        }
        let disabled = if a.allowed.is_err() { " disabled" } else { "" };
        if a.takes_reason {
            let _ = write!(
                out,
                "<label>Reason <input name=\"reason\" id=\"{id}-reason\" \
                 autocomplete=\"off\"{disabled}></label> ",
                id = esc(&id)
            );
        }
        let _ = write!(
            out,
            "<button type=\"submit\" class=\"{kind}\" tabindex=\"0\" data-index=\"{i}\"{disabled}>{label}</button>",
            kind = a.kind.path(),
            label = esc(&a.label),
        );
        if let Err(why) = &a.allowed {
            let _ = write!(out, " <span class=\"refused bad\">{}</span>", esc(why));
        }
        out.push_str("</form>\n");
    }
    out.push_str("</section>\n");
    out
}

fn stage(s: &StageDetail) -> String {
    let v = &s.view;
    let (symbol, _) = super::model::symbol_of(&v.state);
    let mut out = format!(
        "<details class=\"stage-detail\" id=\"stage-{name}\" open><summary><span aria-hidden=\"true\">{symbol}</span> \
         <strong>{name}</strong> {state}</summary>\n<dl class=\"facts\">",
        name = esc(&v.name),
        state = esc(&v.state.label()),
    );
    let mut fact = |k: &str, val: &str| {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(val));
    };
    fact("Selector", &v.selector);
    if let Some(p) = &s.cluster_profile {
        fact("ClusterProfile", p);
    }
    if let Some(r) = &s.runs {
        let runs = match (&r.to_spec, r.spec) {
            (_, Some(true)) => "the spec".to_string(),
            (Some(t), _) => format!("a previous configuration ({t})"),
            _ => "unknown".to_string(),
        };
        let runs = match r.revision {
            Some(n) => format!("{runs}, revision {n}"),
            None => runs,
        };
        fact("Runs", &runs);
    }
    if let Some(d) = &v.current_status_description {
        fact("Status", d);
    }
    if let Some(m) = &v.failure_message {
        fact("Failure", m);
    }
    if let Some(u) = &s.approve_unblocks {
        fact("Awaiting approval", u);
    }
    if let Some(r) = &s.approval_record {
        fact(
            if r.revoked { "Revoked" } else { "Approved" },
            &record_text(&r.user, &r.time, r.reason.as_deref()),
        );
    }
    if s.approval_unrecorded {
        fact(
            "Approved",
            "without a record: the admission webhook did not see the approval, so who gave it is              not known",
        );
    }
    if let Some(u) = &s.used_approval {
        let by = match &u.approval {
            Some(a) => record_text(&a.user, &a.time, a.reason.as_deref()),
            None => "an approval whose giver is not recorded".into(),
        };
        fact("Used to pass the gate", &by);
    }
    if let Some(r) = &s.approval_removed {
        fact(
            "Approval removed",
            &format!("by {} at {} without revoking it", r.user, r.time),
        );
    }
    if let Some(w) = &s.will_reach {
        fact("Will reach", &super::model::plural(w.clusters, "cluster"));
    }
    out.push_str("</dl>\n");
    if let Some(clusters) = &v.clusters {
        let mut listed: Vec<_> = clusters.iter().collect();
        // Failing clusters first: at fleet scale they are the ones worth a look.
        listed.sort_by_key(|c| (c.failure_message.is_none(), c.is_provisioned()));
        let _ = write!(
            out,
            "<table class=\"clusters\"><thead><tr><th>Cluster</th><th>State</th><th>Failure</th>\
             </tr></thead><tbody>"
        );
        for c in listed.iter().take(CLUSTERS_SHOWN) {
            let state = if c.previous_spec {
                "on the previous spec".to_string()
            } else if c.failure_message.is_some() {
                "failed".into()
            } else if c.is_provisioned() {
                "provisioned".into()
            } else if c.summary_name.is_none() {
                "no ClusterSummary yet".into()
            } else {
                "provisioning".into()
            };
            let _ = write!(
                out,
                "<tr><td>{}/{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.namespace),
                esc(&c.name),
                esc(&state),
                esc(c.failure_message.as_deref().unwrap_or(""))
            );
        }
        out.push_str("</tbody></table>\n");
        if listed.len() > CLUSTERS_SHOWN {
            let _ = writeln!(
                out,
                "<p class=\"dim\">and {} more (<code>kubectl promotion describe</code> lists \
                 all)</p>",
                listed.len() - CLUSTERS_SHOWN
            );
        }
    }
    out.push_str("</details>\n");
    out
}

fn record_text(user: &str, time: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("by {user} at {time}: {r:?}"),
        None => format!("by {user} at {time}"),
    }
}

fn approvals(d: &crate::view::Description) -> String {
    let mut out = String::from("<section id=\"approvals\"><h2>Approvals</h2>\n");
    if d.approvals.is_empty() {
        out.push_str("<p class=\"dim\">No approval recorded.</p>\n</section>\n");
        return out;
    }
    out.push_str(
        "<table><thead><tr><th>Stage</th><th>What</th><th>By</th><th>When</th><th>Reason</th>\
         </tr></thead><tbody>\n",
    );
    for a in &d.approvals {
        let what = if a.record.revoked {
            "revoked"
        } else {
            "approved"
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><time>{}</time></td><td>{}</td></tr>",
            esc(&a.stage),
            what,
            esc(&a.record.user),
            esc(&a.record.time),
            esc(a.record.reason.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

/// An error page (refused request, unknown promotion), with the same headers as every page.
pub fn error_page(status: u16, message: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"color-scheme\" content=\"light dark\"><title>{status}</title></head>\
         <body><h1>{status}</h1><p id=\"error\">{}</p></body></html>\n",
        esc(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_text_cannot_become_markup() {
        assert_eq!(
            esc("<img src=x onerror=\"alert('1')\">&"),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
    }

    #[test]
    fn a_card_escapes_what_the_cluster_says() {
        let c = Card {
            name: "p".into(),
            labels: vec![("team".into(), "<b>".into())],
            phase: "failed",
            phase_tone: "bad",
            stages: vec![],
            gate: None,
            next_step: None,
            message: Some("<script>x()</script>".into()),
            reconciled_by: "promotion-controller".into(),
            blocked: None,
            changed: Some("2026-11-29T10:00:00Z".into()),
        };
        let html = card(&c);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;x()&lt;/script&gt;"), "{html}");
        assert!(html.contains("data-labels=\"team=&lt;b&gt;\""), "{html}");
        assert!(html.contains("id=\"p-p\""), "{html}");
    }

    /// An attribute `on…=` (an inline event handler, which the CSP would block anyway).
    fn regex_free_inline_handler(page: &str) -> Option<&str> {
        page.match_indices(" on")
            .map(|(i, _)| &page[i + 1..])
            .find(|rest| {
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .collect();
                word.len() > 2 && rest[word.len()..].starts_with('=')
            })
    }

    #[test]
    fn the_pages_carry_no_inline_script() {
        let page = fleet_page(&[], "ctx", 1);
        assert!(page.contains("<script src=\"/assets/app.js\" defer></script>"));
        assert_eq!(page.matches("<script").count(), 1, "{page}");
        let inline = regex_free_inline_handler(&page);
        assert!(inline.is_none(), "inline handler {inline:?} in {page}");
    }
}
