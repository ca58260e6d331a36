"""lab/native.py: which llama.cpp build answers, and a `make native` build that fails or succeeds cleanly.

The builds here are a SCRIPTED stand-in for pip (a small script that fails, or writes a fake wheel and
install): compiling llama.cpp takes ~17 minutes, so the real build is measured by experiments/bench_llm.py, not here."""
import sys
import textwrap

import pytest

from lab import native
VERSION = native.pinned_version()


def fake_install(folder, version=VERSION):
    info = folder / f"xllamacpp-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Name: xllamacpp\nVersion: {version}\n")


def test_choose_prefers_a_native_build_of_the_pinned_version(tmp_path):
    d = tmp_path / "native"
    assert native.choose({}, d) == "wheel"                       # nothing built
    fake_install(d, "0.0.1")
    assert native.choose({}, d) == "wheel"                       # built for another pin: not used
    d2 = tmp_path / "native2"
    fake_install(d2)
    assert native.choose({}, d2) == "native"
    assert native.choose({"RAG_ENGINE_BUILD": "wheel"}, d2) == "wheel"
    with pytest.raises(native.BuildError, match="run `make native`"):
        native.choose({"RAG_ENGINE_BUILD": "native"}, d)
    with pytest.raises(native.BuildError, match="use auto, native, wheel"):
        native.choose({"RAG_ENGINE_BUILD": "fast"}, d2)


def test_activate_puts_the_native_build_first(tmp_path, monkeypatch):
    d = tmp_path / "native"
    fake_install(d)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert native.activate({}, d) == "native" and sys.path[0] == str(d)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(d)])
    assert native.activate({"RAG_ENGINE_BUILD": "wheel"}, d) == "wheel" and str(d) not in sys.path


PIP = """
import pathlib, sys
args = sys.argv[1:]
if {fail!r} in args[:1]:
    print("error: CMake could not find a compiler", file=sys.stderr)
    sys.exit(1)
if args[0] == "wheel":
    out = pathlib.Path(args[args.index("-w") + 1])
    (out / "xllamacpp-{v}-cp310-abi3-linux_x86_64.whl").write_bytes(b"fake")
else:
    target = pathlib.Path(args[args.index("--target") + 1]) / "xllamacpp-{v}.dist-info"
    target.mkdir(parents=True)
    (target / "METADATA").write_text("Version: {v}\\n")
"""


def scripted_pip(tmp_path, fail):
    script = tmp_path / f"pip_{fail}.py"
    script.write_text(textwrap.dedent(PIP.format(fail=fail, v=VERSION)))
    return (sys.executable, str(script))


def test_a_failed_build_leaves_the_wheel_answering(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = tmp_path / "native"
    with pytest.raises(native.BuildError, match="CMake could not find a compiler"):
        native.build(d, scripted_pip(tmp_path, "wheel"), quiet=True)
    assert not d.exists() and not (tmp_path / "native.new").exists() and native.choose({}, d) == "wheel"


def test_a_build_is_cached_and_installed_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = tmp_path / "native"
    wheel = native.build(d, scripted_pip(tmp_path, "none"), quiet=True)
    assert native.choose({}, d) == "native" and wheel.parent == native.cache_dir(VERSION, native.cpu_flags())
    # a rebuilt venv: the cached wheel is installed again without compiling (a pip that cannot build)
    import shutil
    shutil.rmtree(d)
    assert native.build(d, scripted_pip(tmp_path, "wheel"), quiet=True) == wheel and native.choose({}, d) == "native"
    # an install that fails keeps the working native build in place
    with pytest.raises(native.BuildError, match="pip install exited 1"):
        native.build(d, scripted_pip(tmp_path, "install"), quiet=True)
    assert native.choose({}, d) == "native" and not (tmp_path / "native.new").exists()


def test_the_hint_names_what_the_wheel_does_not_use(tmp_path):
    wheel_info = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 |"
    assert native.missing_from_wheel({"avx2", "avx512f", "avx512_vnni"}, wheel_info) == ["AVX512", "AVX512_VNNI"]
    assert native.missing_from_wheel({"avx2"}, wheel_info) == []
    assert native.missing_from_wheel({"avx512f"}, wheel_info + " AVX512 = 1 |") == []
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu sse2 avx avx2 avx512f avx512_vnni\n")
    assert native.cpu_flags(cpuinfo) == {"avx", "avx2", "avx512f", "avx512_vnni"}
