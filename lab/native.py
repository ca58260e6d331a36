"""Week 3 (speed): llama.cpp compiled for this CPU, beside the prebuilt wheel, and which one answers.

    python -m lab.native --build    # `make native`: compile the pinned xllamacpp for this CPU (once, offline)
    python -m lab.native --status   # which build the embedded engine uses, and the CPU's instruction sets
    python -m lab.native --hint     # one line when this CPU has instructions the prebuilt wheel lacks

The prebuilt xllamacpp wheel is compiled for AVX2. On a CPU with AVX-512 (VNNI, BF16) a build from the
pinned sdist with GGML_NATIVE (its default) reads prompts faster. `--build`:
1. looks for a wheel already built for this version and CPU in the wheel cache
   (~/.cache/rag-lab/wheels/<version>-<cpu key>/, so a rebuilt venv or a fresh clone reuses it);
2. otherwise runs `pip wheel --no-binary xllamacpp` with CMAKE_ARGS that switch off the parts that would
   fetch from the network (BoringSSL, OpenSSL, llguidance); the compile takes 17-21 min on 2 cores;
3. installs it with `pip install --target` into a new folder and renames that to .venv/native/ only when the
   install succeeded, so a failed build leaves the prebuilt wheel answering and prints one line saying why.
Which build answers (`choose()`): RAG_ENGINE_BUILD=wheel or native forces one (native fails with one line
when it is not built); by default native when .venv/native/ holds the pinned version, else the wheel.
llm.py calls `activate()` before it imports xllamacpp. Not handled: other CPUs sharing a venv (the
native folder belongs to the CPU it was built on; `--build` on another CPU builds its own wheel).
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parent.parent   # the repository
NATIVE_DIR = ROOT / ".venv" / "native"
CMAKE_ARGS = "-DLLAMA_BUILD_BORINGSSL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_LLGUIDANCE=OFF"  # no network at build time
BUILD_MINUTES = 20        # 17-21 min measured here on 2 cores
BUILDS = ("auto", "native", "wheel")


class BuildError(RuntimeError):
    pass


def pinned_version(requirements=ROOT / "requirements.txt"):
    """The xllamacpp version requirements.txt pins: '2026.10.11549'."""
    m = re.search(r"^xllamacpp==([\w.]+)", Path(requirements).read_text(), re.M)
    if not m:
        raise BuildError(f"{requirements} does not pin xllamacpp")
    return m.group(1)


def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The SIMD instruction sets this CPU reports: {'avx2', 'avx512f', 'avx512_vnni', ...}."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return set()
    line = next((l for l in text.splitlines() if l.startswith("flags")), "")  # noqa: E741
    return {f for f in line.split(":", 1)[-1].split() if f.startswith(("avx", "fma", "f16c", "amx"))}


def cache_dir(version, flags):
    """Where a wheel built for this version and CPU is kept, outside the venv."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rag-lab" / "wheels"
    return root / f"{version}-{hashlib.sha1(' '.join(sorted(flags)).encode()).hexdigest()[:10]}"


def installed_version(native_dir=NATIVE_DIR):
    """The xllamacpp version in the native folder, or None."""
    for meta in Path(native_dir).glob("xllamacpp-*.dist-info/METADATA"):
        m = re.search(r"^Version: (\S+)", meta.read_text(), re.M)
        if m:
            return m.group(1)
    return None


def choose(env=None, native_dir=NATIVE_DIR, version=None):
    """'native' or 'wheel': which xllamacpp the embedded engine imports."""
    env = os.environ if env is None else env
    want = (env.get("RAG_ENGINE_BUILD") or "auto").strip().lower()
    if want not in BUILDS:
        raise BuildError(f"RAG_ENGINE_BUILD={want!r}: use {', '.join(BUILDS)}")
    have = installed_version(native_dir) == (version or pinned_version())
    if want == "native" and not have:
        raise BuildError(f"RAG_ENGINE_BUILD=native but {native_dir} holds no xllamacpp {version or pinned_version()}: "
                         "run `make native`")
    return "native" if want != "wheel" and have else "wheel"


def activate(env=None, native_dir=NATIVE_DIR):
    """Put the native build first on sys.path when choose() picks it; returns the choice."""
    build = choose(env, native_dir)
    if build == "native" and str(native_dir) not in sys.path:
        sys.path.insert(0, str(native_dir))
    return build


def build(native_dir=NATIVE_DIR, pip=(sys.executable, "-m", "pip"), quiet=False):
    """Build (or reuse) the wheel for this CPU and install it into native_dir; BuildError says why not."""
    version, flags = pinned_version(), cpu_flags()
    cache = cache_dir(version, flags)
    wheels = sorted(cache.glob(f"xllamacpp-{version}-*.whl"))
    if not wheels:
        print(f"native: compiling xllamacpp {version} for this CPU ({', '.join(sorted(flags)) or 'flags unknown'}); "
              f"about {BUILD_MINUTES} min on 2 cores", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run([*pip, "wheel", "--no-binary", "xllamacpp", "--no-deps", f"xllamacpp=={version}",
                                  "-w", tmp], env={**os.environ, "CMAKE_ARGS": CMAKE_ARGS,
                                                   "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)},
                                 capture_output=quiet, text=True)
            built = sorted(Path(tmp).glob("xllamacpp-*.whl"))
            if run.returncode or not built:
                raise BuildError(f"pip wheel exited {run.returncode}" + (f": {_last_line(run)}" if quiet else ""))
            cache.mkdir(parents=True, exist_ok=True)
            shutil.copy(built[0], cache / built[0].name)
        wheels = sorted(cache.glob(f"xllamacpp-{version}-*.whl"))
    staging = Path(str(native_dir) + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    run = subprocess.run([*pip, "install", "--no-deps", "--target", str(staging), str(wheels[-1])],
                         capture_output=True, text=True)
    if run.returncode or installed_version(staging) != version:
        shutil.rmtree(staging, ignore_errors=True)
        raise BuildError(f"pip install exited {run.returncode}: {_last_line(run)}")
    shutil.rmtree(native_dir, ignore_errors=True)
    staging.rename(native_dir)
    return wheels[-1]


def _last_line(run):
    lines = [l for l in ((run.stderr or "") + (run.stdout or "")).splitlines() if l.strip()]  # noqa: E741
    return lines[-1].strip() if lines else "no output"


def system_info(build_name):
    """llama.cpp's system info line of one build, read in a child process (imports stay clean here)."""
    code = "import sys; from lab import native; native.activate(); import xllamacpp; print(xllamacpp.get_system_info())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "RAG_ENGINE_BUILD": build_name})
    return out.stdout.strip() or _last_line(out)


def missing_from_wheel(flags=None, wheel_info=None):
    """AVX-512 sets this CPU has that the prebuilt wheel's llama.cpp does not use: ['AVX512', 'AVX512_VNNI', ...]."""
    flags = cpu_flags() if flags is None else flags
    wheel_info = system_info("wheel") if wheel_info is None else wheel_info
    have = {"avx512f": "AVX512", "avx512_vnni": "AVX512_VNNI", "avx512_bf16": "AVX512_BF16",
            "avx512vbmi": "AVX512_VBMI"}
    return [name for flag, name in have.items() if flag in flags and f"{name} = 1" not in wheel_info]


def main():
    ap = argparse.ArgumentParser(description="Build llama.cpp (xllamacpp) for this CPU, or say which build answers.")
    ap.add_argument("--build", action="store_true", help="compile the pinned xllamacpp for this CPU into .venv/native")
    ap.add_argument("--status", action="store_true", help="which build answers, and llama.cpp's instruction sets")
    ap.add_argument("--hint", action="store_true", help="one line when `make native` would use more of this CPU")
    args = ap.parse_args()
    try:
        if args.build:
            wheel = build()
            print(f"native: installed {wheel.name} into {NATIVE_DIR}; the embedded engine now uses it "
                  f"(RAG_ENGINE_BUILD=wheel goes back to the prebuilt wheel)")
        elif args.hint:
            lacking = missing_from_wheel() if choose() == "wheel" else []
            if lacking:
                print(f"note: this CPU has {', '.join(lacking)}, which the prebuilt llama.cpp wheel does not use; "
                      f"`make native` compiles it for this CPU once (~{BUILD_MINUTES} min) and reads prompts faster")
        else:
            b = choose()
            print(f"build {b} ({NATIVE_DIR if b == 'native' else 'prebuilt wheel'}); "
                  f"CPU: {', '.join(sorted(cpu_flags()))}")
            print(f"llama.cpp: {system_info(b)}")
    except BuildError as e:
        sys.exit(f"native: {e}; the prebuilt wheel stays in use")


if __name__ == "__main__":
    main()
