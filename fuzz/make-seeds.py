#!/usr/bin/env python3
"""Raw seed inputs for the fuzz targets, from the example manifests and the parity corpora.

Writes one file per input under corpus/<target>-raw/ (ignored by git). `cargo fuzz cmin` then
keeps the inputs that add coverage, and those are what seeds/<target>/ holds (README.md, "Seeds").

  python3 fuzz/make-seeds.py            # from the repository root
"""
import hashlib
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "shared/tests/fixtures"
OUT = ROOT / "fuzz/corpus"


def strings_under(value, key, out):
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key and isinstance(v, str):
                out.append(v)
            else:
                strings_under(v, key, out)
    elif isinstance(value, list):
        for v in value:
            strings_under(v, key, out)


def example_values(key):
    """Strings under `key` in the admission seeds (the examples as JSON objects)."""
    out = []
    for f in sorted((ROOT / "fuzz/seeds/admission").glob("*-create.json")):
        strings_under(json.loads(f.read_text())["request"]["object"], key, out)
    return out


def write(target, inputs):
    d = OUT / f"{target}-raw"
    d.mkdir(parents=True, exist_ok=True)
    for data in inputs:
        data = data if isinstance(data, bytes) else data.encode()
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"{target}: {len(set(inputs))} raw seeds in {d.relative_to(ROOT)}")


def lint_seeds():
    inputs = [f.read_bytes() for f in sorted((ROOT / "examples").glob("*.yaml"))]
    objects = [json.loads(f.read_text())["request"]["object"]
               for f in sorted((ROOT / "fuzz/seeds/admission").glob("*-create.json"))]
    inputs += [json.dumps(o, indent=2).encode() for o in objects]
    inputs.append(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects[:2]}).encode())
    return inputs


def scripts_seeds():
    lua, cel = example_values("script"), example_values("rule")
    for line in (FIXTURES / "lua/gopher-lua-verdicts.jsonl").read_text().splitlines():
        case = json.loads(line)
        if "script" in case:
            lua.append(case["script"])
    for name in ["lint-parity", "cel-go-parser", "cel-go-checker", "cel-spec-conformance"]:
        cel += [c["rule"] for c in json.loads((FIXTURES / f"cel/{name}.json").read_text())]
    obj = json.dumps({"status": {"phase": "Running", "readyReplicas": 2}, "spec": {"replicas": 2}})
    # Some with an object after a NUL byte: what the runner evaluates them against.
    return lua + cel + [s + "\0" + obj for s in lua[:20] + cel[:20]]


def schedules_seeds():
    values = []
    for key in ["delay", "timeout", "interval", "from", "to"]:
        values += example_values(key)
    parity = (ROOT.parent / "shared/reference/lint-parity.md")
    if parity.exists():
        text = parity.read_text()
        section = text[text.find("## `duration-invalid`"):text.find("## `lua-syntax`")]
        values += re.findall(r"^\| `([^`]*)`", section, re.M)
    return values + ["0", "1h30m", "@daily", "@every 5m", "*/15 9-17 * * mon-fri", "0 0 1 jan,jul *"]


def main():
    write("lint", lint_seeds())
    write("scripts", scripts_seeds())
    write("schedules", schedules_seeds())
    return 0


if __name__ == "__main__":
    sys.exit(main())
