"""The README and docs/*.md: every ```python block runs, and every relative
link leads somewhere.

Each Markdown file's ```python blocks run in order, as one script, in one
fresh Python per file (so a later block may use names from an earlier one),
with this process's environment (the OCL_ICD_VENDORS that tests/conftest.py
set for CLAYOUT_TEST_PLATFORM) and PYOPENCL_CTX pointing at the tests'
OpenCL device, so `cly.Engine()` in the docs picks that device. They run
in the Intel pass (marked needs_intel, left out of the PoCL pass). A block
whose first line is `# needs: sycl` needs dpctl and Intel's runtime, one
whose first line is `# needs: torch` PyTorch: such blocks run apart, in
their own Python. A failing block fails the
test with the file, the block's line and the stderr; tracebacks give the
Markdown file's own line numbers."""
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README_MAX_LINES = 200
#: What a block's `# needs: X` first line may name, and the marker of its test.
NEEDS = {"sycl": "needs_intel", "torch": "needs_intel"}
#: The module each need imports, and how to install it. Under CI a missing
#: dpctl fails (CI installs it); PyTorch is no dependency: its blocks run
#: where `make torch` found its CPU wheel, and skip elsewhere.
NEEDS_MODULE = {"sycl": ("dpctl", "pip install 'clayout[sycl]'", True),
                "torch": ("torch", "make torch", False)}
NEEDS_LINE = re.compile(r"#\s*needs:\s*(\w+)")
#: An opening fence and the first word of its info string (no backtick in a
#: backtick fence's info string, as CommonMark says: "```` ```x ````" is text).
FENCE = re.compile(r"^(?:(`{3,})(?!.*`)|(~{3,}))\s*(\S*)")
#: Info strings that look like Python but would not run: use ```python.
PYTHON_LOOKALIKES = {"py", "python3", "py3", "pycon", "ipython", "python-repl"}
TIMEOUT_S = 600            # a hang, not slowness: each file takes seconds


def pages() -> list[pathlib.Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def name(page: pathlib.Path) -> str:
    return page.relative_to(ROOT).as_posix()


@dataclass
class Block:
    line: int          # the opening fence's line, 1-based; the code starts on the next
    info: str
    code: str

    @property
    def needs(self) -> str | None:
        first = self.code.lstrip("\n").split("\n", 1)[0].strip()
        match = NEEDS_LINE.match(first)
        return match.group(1) if match else None


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text (CommonMark's rules: a
    block closes at a fence of the same character, at least as long, with
    nothing after it; an unclosed block runs to the end)."""
    blocks, lines, at = [], text.split("\n"), 0
    while at < len(lines):
        match = FENCE.match(lines[at])
        if not match:
            at += 1
            continue
        fence, start = match.group(1) or match.group(2), at
        at += 1
        while at < len(lines) and not (lines[at].startswith(fence[0] * len(fence))
                                       and not lines[at].strip(fence[0] + " \t")):
            at += 1
        blocks.append(Block(start + 1, match.group(3), "\n".join(lines[start + 1:at]) + "\n"))
        at += 1
    return blocks


def python_blocks(page: pathlib.Path) -> list[Block]:
    return [b for b in fenced_blocks(page.read_text()) if b.info == "python"]


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks, inline code removed."""
    inside = {n for b in fenced_blocks(text)
              for n in range(b.line, b.line + b.code.count("\n") + 2)}
    for number, line in enumerate(text.split("\n"), 1):
        if number not in inside:
            yield number, re.sub(r"(`+)(.+?)(?<!`)\1(?!`)", "", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    found, seen = set(), {}
    for _, line in prose_lines(page.read_text()):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def broken_links(page: pathlib.Path) -> list[str]:
    bad = []
    for number, line in prose_lines(page.read_text()):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):      # http:, mailto: ...
                continue
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                bad.append(f"{name(page)}:{number}: {target}: no such file {where}")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                bad.append(f"{name(page)}:{number}: {target}: no heading #{anchor} in "
                           f"{where.relative_to(ROOT)}")
    return bad


# -- the blocks run -----------------------------------------------------------------

RUNNER = """\
import json, sys
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for block in blocks:
    print(f"clayout-docs: block at line {block['line']}", file=sys.stderr, flush=True)
    code = "\\n" * block["line"] + block["code"]      # the Markdown file's line numbers
    exec(compile(code, block["path"], "exec"), namespace)
"""


def opencl_ctx(engine) -> str | None:
    """PYOPENCL_CTX ("platform:device") for the tests' OpenCL device."""
    if engine.kind != "opencl":
        return None
    import pyopencl as cl
    for p, platform in enumerate(cl.get_platforms()):
        for d, device in enumerate(platform.get_devices()):
            if device == engine.device:
                return f"{p}:{d}"
    pytest.fail(f"the tests' device {engine.device.name!r} is not among pyopencl's devices")


def cases():
    # The blocks run in the Intel pass only (marked needs_intel): once is
    # enough to keep the docs from rotting, and make test's time stays.
    once = [pytest.mark.needs_intel]
    for page in pages():
        blocks = python_blocks(page)
        if any(b.needs is None for b in blocks):
            yield pytest.param(page, None, marks=once, id=name(page))
        for needs in sorted({b.needs for b in blocks} - {None}):
            marks = [getattr(pytest.mark, NEEDS[needs])] if needs in NEEDS else once
            yield pytest.param(page, needs, marks=marks, id=f"{name(page)}-needs-{needs}")


@pytest.mark.parametrize("page, needs", list(cases()))
def test_python_blocks_run(page, needs, cl_engine, tmp_path):
    """The file's blocks (those with this `# needs:`, or none) run in order
    in one Python, in an empty folder (a block may write files)."""
    if needs is not None:
        assert needs in NEEDS, f"{name(page)}: '# needs: {needs}': expected one of {sorted(NEEDS)}"
        module, install, required_in_ci = NEEDS_MODULE[needs]
        if importlib.util.find_spec(module) is None:
            message = f"{module} is not installed ({install})"
            if os.environ.get("CI") and required_in_ci:
                pytest.fail(message + " -- CI requires it", pytrace=False)
            pytest.skip(message)
    blocks = [b for b in python_blocks(page) if b.needs == needs]
    script, data = tmp_path / "run_blocks.py", tmp_path / "blocks.json"
    script.write_text(RUNNER)
    data.write_text(json.dumps([{"line": b.line, "code": b.code, "path": str(page)}
                                for b in blocks]))
    env = dict(os.environ)
    ctx = opencl_ctx(cl_engine)
    if ctx is not None:
        env["PYOPENCL_CTX"] = ctx
    done = subprocess.run([sys.executable, str(script), str(data)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        started = re.findall(r"clayout-docs: block at line (\d+)", done.stderr)
        where = f"the python block at line {started[-1]}" if started else "the runner"
        stderr = re.sub(r"clayout-docs: block at line \d+\n", "", done.stderr)
        pytest.fail(f"{name(page)}: {where} failed (exit status {done.returncode}):\n"
                    f"{stderr[-6000:]}", pytrace=False)


# -- the pages' shape ---------------------------------------------------------------

def test_readme_is_short():
    count = len((ROOT / "README.md").read_text().splitlines())
    assert count <= README_MAX_LINES, \
        f"README.md has {count} lines (at most {README_MAX_LINES}): move the detail into docs/"


@pytest.mark.parametrize("page", pages(), ids=name)
def test_relative_links_resolve(page):
    """Every relative link and image (outside code) names a file or folder
    that exists, and a heading of it where it has an anchor."""
    bad = broken_links(page)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("page", pages(), ids=name)
def test_code_blocks_say_their_language(page):
    """Every fenced block names its language, and Python is ```python
    (which runs): pseudo-code, shell and output are text, sh or console."""
    bad = [f"{name(page)}:{b.line}: ```{b.info}" for b in fenced_blocks(page.read_text())
           if not b.info or b.info.lower() in PYTHON_LOOKALIKES]
    assert not bad, "blocks without a language or with a Python look-alike:\n" + "\n".join(bad)


def test_extractor_reads_fences_as_markdown_does():
    text = "a\n```python\nx = 1\n```\n\n````text\n```python\nnot code\n```\n````\n" \
           "```python\n# needs: sycl\nimport dpctl\n```\n```` ```python ```` is text\n"
    blocks = fenced_blocks(text)
    assert [(b.line, b.info) for b in blocks] == [(2, "python"), (6, "text"), (11, "python")]
    assert blocks[0].code == "x = 1\n" and blocks[0].needs is None
    assert blocks[2].needs == "sycl"
    assert slug("Tuning for your device: python -m clayout tune") == \
        "tuning-for-your-device-python--m-clayout-tune"
    assert slug("On a real model's weights") == "on-a-real-models-weights"
