"""Runs a repository check script (scripts/check_*.py) on the repository or on a fake tree."""
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_checker(checker, files):
    """Runs `checker` on a fake tree ({relative path: text}), or on the repository (None)."""
    if files is None:
        return subprocess.run([sys.executable, str(checker), str(REPO)], capture_output=True,
                              text=True, check=False)
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        (root / "trainer").mkdir()
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return subprocess.run([sys.executable, str(checker), str(root)], capture_output=True,
                              text=True, check=False)
