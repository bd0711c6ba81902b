#!/usr/bin/env python3
"""Put the output of scripts/tour.sh into README.md between the tour markers.

    scripts/tour.sh > /tmp/tour.out && scripts/readme_tour.py /tmp/tour.out
"""
import re
import sys

START = "<!-- tour:start -->"
END = "<!-- tour:end -->"

INTRO = {
    "lint": "Offline, in CI or a pre-commit hook: every finding with its file position. Exit 1 on errors (`--strict`: warnings too) or when no input holds a ClusterPromotion, 2 when an input cannot be read or is not YAML.",
    "list": "On a cluster (here the project's stand-in API server loaded with `examples/`, with the real webhook behind it):",
    "describe": "Where a rollout stands, stage by stage, with the clusters behind each stage:",
    "plan": "Before a rollout starts: which clusters each stage will reach, and the hazards (a selector that matches nothing, a cluster in two stages, paused or not-ready clusters):",
    "approve": "Approve the stage that is waiting. The write is one JSON Patch guarded by `test` operations, so it can only ever flip that stage's flag; the webhook records who and why:",
    "describe2": "The approval is now pending (Sveltos promotes on its next pass) and recorded:",
    "diff-stage": "What promoting past `staging` changes at the next stage (`kubectl diff` exit codes: 0 same, 1 different):",
    "diff-file": "What applying a changed manifest would do, computed by a server-side dry run (so the webhook's mutations show), with the consequences spelled out:",
    "wait": "Scripting: `wait` exits 0 when reached, 2 when the pipeline failed first (a failure Sveltos retries only with `--fail-fast`; it keeps waiting through one otherwise), 3 on timeout:",
}


def main() -> None:
    text = open(sys.argv[1], encoding="utf-8").read()
    tmp = re.search(r"\$ kubectl promotion diff -f (\S+)/bump\.yaml", text)
    if tmp:
        text = text.replace(tmp.group(1) + "/", "")
    blocks = [b for b in text.split("\n$ ") if b.strip()]
    parts, describes = [], 0
    for block in blocks:
        block = block.lstrip("$ ").rstrip("\n")
        command = block.split("\n", 1)[0]
        words = command.split()
        verb = words[2] if words[0] == "kubectl" else words[1]
        key = verb
        if verb == "describe":
            describes += 1
            key = "describe" if describes == 1 else "describe2"
        if verb == "diff":
            key = "diff-stage" if "--stage" in words else "diff-file"
        if verb == "approve" and "--reason" in words:
            i = words.index("--reason")
            block = block.replace(" ".join(words[i + 1:]), '"' + " ".join(words[i + 1:]) + '"', 1)
        parts.append(f"{INTRO.get(key, '')}\n\n```console\n$ {block}\n```\n")
    readme = open("README.md", encoding="utf-8").read()
    before, rest = readme.split(START, 1)
    _, after = rest.split(END, 1)
    body = "\n".join(parts)
    open("README.md", "w", encoding="utf-8").write(f"{before}{START}\n{body}{END}{after}")


if __name__ == "__main__":
    main()
