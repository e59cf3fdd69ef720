"""Every ```python block of doc/python.md runs (each section's blocks in order, as one program),
in a scratch directory, with Fashion-MNIST prepared into a temporary data directory."""

import os
import re
import subprocess

import pytest

SRC = os.environ.get("METACL_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
METACL = os.environ.get("METACL", os.path.join(SRC, "metacl"))
DOC = os.path.join(SRC, "doc", "python.md")


def sections():
    text = open(DOC, encoding="utf-8").read()
    out = []
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title = part.splitlines()[0].strip()
        blocks = re.findall(r"^```python\n(.*?)^```", part, flags=re.M | re.S)
        if blocks:
            out.append((title, blocks))
    return out


SECTIONS = sections()


def test_the_doc_has_snippets():
    assert len(SECTIONS) >= 4, [t for t, _ in SECTIONS]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("docdata")
    r = subprocess.run([METACL, "data", "prepare", "fmnist", "--data-dir", str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(d)


@pytest.mark.parametrize("title,blocks", SECTIONS, ids=[t[:40] for t, _ in SECTIONS])
def test_snippets_run(title, blocks, data_dir, tmp_path, monkeypatch):
    if any("matplotlib" in b for b in blocks):
        pytest.importorskip("matplotlib", reason="the plot needs python3-matplotlib")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("METACL_DATA", data_dir)
    scope = {"__name__": "__doc__"}
    for i, code in enumerate(blocks):
        exec(compile(code, "%s [%s, block %d]" % (DOC, title, i + 1), "exec"), scope)
    if any("savefig" in b for b in blocks):
        pngs = [f for f in os.listdir(tmp_path) if f.endswith(".png")]
        assert pngs and all(os.path.getsize(tmp_path / f) > 1000 for f in pngs)


def test_the_op_list_is_the_package_s():
    import metacl
    text = open(DOC, encoding="utf-8").read()
    listed = re.search(r"<!-- python-ops -->(.*?)<!-- /python-ops -->", text, flags=re.S).group(1)
    names = re.findall(r"`(\w+)`", listed)
    want = [n for n in metacl.ops.__all__ if n not in ("run", "AttnOpts", "OP_NAMES")]
    assert names == want, "doc/python.md's op list differs from metacl.ops: %s" % sorted(set(names) ^ set(want))
