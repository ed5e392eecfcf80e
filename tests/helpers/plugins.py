"""Plugin packages for tests, installed with pip into a temporary folder (never into the virtualenv) that a test
puts on PYTHONPATH: the README's "Your own models" package (its kernel, orbit and likelihood snippets as
`my_parts.py`, its `pyproject.toml` snippet as is), and small packages whose module does something else (raises on
import, ...)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_section(title: str = "Your own models") -> str:
    """The README's section `## title`, up to the next `## ` heading."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def readme_blocks(language: str, title: str = "Your own models") -> list[str]:
    """The fenced code blocks of `language` in that README section, in order."""
    return re.findall(rf"```{language}\n(.*?)```", readme_section(title), flags=re.S)


def install(source: Path, target: Path) -> Path:
    """`pip install --target target source` offline, without dependencies or an isolated build; returns target."""
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                          "--no-build-isolation", "--disable-pip-version-check", "--target", str(target),
                          str(source)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return target


def package(where: Path, dist: str, module: str, source: str) -> Path:
    """A one-module package `dist` in folder `where` whose entry point (group invariance_lab.plugins) is
    `module`, the module's text being `source`; returns the folder."""
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{module}.py").write_text(source)
    (where / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{dist}"\nversion = "0.1"\n\n'
        f'[project.entry-points."invariance_lab.plugins"]\n{module} = "{module}"\n')
    return where


def readme_package(where: Path) -> Path:
    """The README's plugin package: `my_parts.py` = its kernel, orbit and likelihood snippets, and its
    `pyproject.toml`."""
    where.mkdir(parents=True, exist_ok=True)
    kernel, orbit, likelihood = readme_blocks("python")[:3]
    (where / "my_parts.py").write_text(kernel + "\n\n" + orbit + "\n\n" + likelihood)
    (where / "pyproject.toml").write_text(readme_blocks("toml")[0])
    return where


def env_with(*folders: Path, **extra: str) -> dict[str, str]:
    """os.environ with `folders` and this checkout first on PYTHONPATH (and `extra` variables)."""
    path = os.pathsep.join([*map(str, folders), str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return dict(os.environ, PYTHONPATH=path, **extra)


def invlab(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m invlab ARGS` as a real process with `env`."""
    return subprocess.run([sys.executable, "-m", "invlab", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
