"""One-off for issue 26 item 4: rename modules of the iowall package and rewrite every
import of them (relative imports resolved against each file's own package), plus dotted
names and file names in text files. Run once from the checkout (python3
scripts/rename_modules.py .), then ruff check --fix, and delete this file."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(sys.argv[1])
RENAMES = {
    "iowall.knobs": "iowall.knob_session",
    "iowall.paths": "iowall.dirs",
    "iowall.analysis.paths": "iowall.analysis.kernel_paths",
    "iowall.report.scale": "iowall.report.byte_prefix",
    "iowall.analysis.decide": "iowall.analysis.repeat_rule",
    "iowall.store.fits": "iowall.store.row_checks",
}


def mod_path(mod: str) -> Path:
    return ROOT / "src" / (mod.replace(".", "/") + ".py")


def package_of(f: Path) -> str | None:
    try:
        rel = f.relative_to(ROOT / "src")
    except ValueError:
        try:
            rel = f.relative_to(ROOT)
        except ValueError:
            return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    else:
        parts = parts[:-1]
    return ".".join(parts)


FROM_RE = re.compile(r"^(\s*from\s+)(\.+)([\w.]*)(\s+import\s+)(.*)$")


def resolve(pkg: str, dots: str, name: str) -> str:
    base = pkg.split(".") if pkg else []
    up = len(dots) - 1
    if up:
        base = base[:-up]
    return ".".join([*base, name] if name else base)


def rewrite_py(f: Path) -> bool:
    pkg = package_of(f)
    lines = f.read_text().split("\n")
    changed = False
    for i, line in enumerate(lines):
        m = FROM_RE.match(line)
        if m and pkg is not None:
            pre, dots, name, imp, rest = m.groups()
            full = resolve(pkg, dots, name)
            for old, new in RENAMES.items():
                if full == old or full.startswith(old + "."):
                    newfull = new + full[len(old):]
                    # keep it relative: same dots, replace the tail
                    oldtail = name
                    newtail = newfull[len(resolve(pkg, dots, "")) + 1:] if resolve(pkg, dots, "") else newfull
                    lines[i] = f"{pre}{dots}{newtail}{imp}{rest}"
                    changed = True
                    break
            else:
                # from . import paths  (a module imported by name)
                if not name:
                    names = [n.strip() for n in rest.strip("()").split(",")]
                    for old, new in RENAMES.items():
                        opkg, _, oname = old.rpartition(".")
                        npkg, _, nname = new.rpartition(".")
                        if full == opkg and oname in names:
                            lines[i] = re.sub(rf"\b{oname}\b", f"{nname} as {oname}"
                                              if False else nname, line)
                            changed = True
        for old, new in RENAMES.items():
            if re.search(rf"\b{re.escape(old)}\b", lines[i]):
                lines[i] = re.sub(rf"\b{re.escape(old)}\b", new, lines[i])
                changed = True
    if changed:
        f.write_text("\n".join(lines))
    return changed


def main() -> None:
    for old, new in RENAMES.items():
        subprocess.run(["git", "-C", str(ROOT), "mv", str(mod_path(old)), str(mod_path(new))],
                       check=True)
    files = [Path(p) for p in subprocess.run(["git", "-C", str(ROOT), "ls-files"],
                                             capture_output=True, text=True).stdout.split()]
    for rel in files:
        f = ROOT / rel
        if f.suffix == ".py":
            if rewrite_py(f):
                print("py", rel)
        elif f.suffix in (".md", ".toml", ".cfg", ".ini", ".txt") or f.name == "Makefile":
            t = f.read_text()
            n = t
            for old, new in RENAMES.items():
                n = re.sub(rf"\b{re.escape(old)}\b", new, n)
                o_file = old.split(".", 1)[1].replace(".", "/") + ".py"
                n_file = new.split(".", 1)[1].replace(".", "/") + ".py"
                n = re.sub(rf"(?<![\w/]){re.escape(o_file)}\b", n_file, n)
                n = n.replace(f"iowall/{o_file}", f"iowall/{n_file}")
            if n != t:
                f.write_text(n)
                print("text", rel)


main()
