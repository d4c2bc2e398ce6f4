"""Every script in examples/ runs to the end (they assert what they show)."""
import pathlib
import subprocess
import sys

import pytest

# Scripts that need a download (`make weights`) run in their own test file.
OWN_TEST = {"quantize_weights.py": "test_weights_example.py"}
EXAMPLES = sorted(p for p in (pathlib.Path(__file__).parents[1] / "examples").glob("*.py")
                  if p.name not in OWN_TEST)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script):
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), f"{script.name} printed nothing"


def test_quickstart_exists():
    assert any(p.name == "quickstart.py" for p in EXAMPLES)


@pytest.mark.parametrize("script", sorted(OWN_TEST))
def test_excluded_example_has_its_own_test(script):
    here = pathlib.Path(__file__).parent
    assert (here.parent / "examples" / script).exists(), f"{script} is gone: drop it from OWN_TEST"
    assert script in (here / OWN_TEST[script]).read_text(), f"{OWN_TEST[script]} does not run {script}"
