#!/usr/bin/env python3
"""scripts/check_published_numbers.py: the repository passes; a number that differs from its
result file, a marker that points nowhere and an unmarked measurement in a covered file fail."""
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

REPO = pathlib.Path(__file__).resolve().parents[2]
CHECKER = REPO / "scripts" / "check_published_numbers.py"
RESULT = {"scenario": "x", "metrics": {"ratio": 1.9661898, "share": 0.1811, "step_ms": 2585.56,
                                       "bytes": 1751740448, "wall_s": 123.4,
                                       "sweep": [{"v": 0.98}]}}


def run(readme=None, benchmarks=None, results_readme=None):
    """Runs the checker on the repository (root=None and no text) or on a fake tree."""
    if readme is None and benchmarks is None and results_readme is None:
        return subprocess.run([sys.executable, str(CHECKER), str(REPO)], capture_output=True,
                              text=True, check=False)
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        (root / "benchmarks" / "results").mkdir(parents=True)
        (root / "docs").mkdir()
        (root / "benchmarks" / "results" / "x.json").write_text(json.dumps(RESULT))
        (root / "README.md").write_text(readme or "")
        (root / "docs" / "benchmarks.md").write_text(benchmarks or "")
        (root / "benchmarks" / "results" / "README.md").write_text(results_readme or "")
        return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                              text=True, check=False)


class PublishedNumbersTest(unittest.TestCase):
    def test_the_repository_passes(self):
        result = run()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_numbers_equal_to_their_result_pass(self):
        result = run(readme="1.97×<!--#x metrics.ratio--> and 18%<!--#x metrics.share *100-->, "
                            "2.59 s<!--#x metrics.step_ms /1000-->, 1752 MB<!--#x metrics.bytes /1e6-->, "
                            "2 min 03 s<!--#x metrics.wall_s min:s-->, 0.98×<!--#x metrics.sweep.0.v-->, "
                            "a target of 5 MB/s<!--#set-->, and `timeout 60 s` in code.\n")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_a_number_that_differs_from_its_result_fails(self):
        # The kind issue 31 found: 0.34 where the file says 0.305, 2.71 s where it says 2.59.
        for text in ("**1.90×**<!--#x metrics.ratio-->", "17%<!--#x metrics.share *100-->",
                     "2.71 s<!--#x metrics.step_ms /1000-->", "2 min 13 s<!--#x metrics.wall_s min:s-->"):
            with self.subTest(text=text):
                result = run(readme=text + "\n")
                self.assertEqual(result.returncode, 1, result.stdout)
                self.assertIn("README.md:1:", result.stdout)

    def test_a_marker_that_points_nowhere_fails(self):
        for marker, message in (("<!--#y metrics.ratio-->", "no benchmarks/results/y.json"),
                                ("<!--#x metrics.nothing-->", "has no number at metrics.nothing"),
                                ("<!--#x metrics.ratio ^2-->", "unknown conversion"),
                                ("<!--#x-->", "should be")):
            with self.subTest(marker=marker):
                result = run(benchmarks="1.97×" + marker + "\n")
                self.assertEqual(result.returncode, 1, result.stdout)
                self.assertIn(message, result.stdout)

    def test_an_unmarked_measurement_in_a_covered_file_fails(self):
        for text in ("runs at 1.97× HF", "took 16 min", "2 min 03 s", "peaks at 380 MB", "18% hidden"):
            with self.subTest(text=text):
                result = run(benchmarks="It " + text + ".\n")
                self.assertEqual(result.returncode, 1, result.stdout)
                self.assertIn("docs/benchmarks.md:1:", result.stdout)
                self.assertIn("has no source", result.stdout)


    def test_what_the_report_generates_needs_no_marker(self):
        generated = ("<!-- generated:begin x -->\n| ours | 1.97× | 821 MB |\n"
                     "<!-- generated:end x -->\n")
        self.assertEqual(run(results_readme=generated).returncode, 0)
        result = run(results_readme=generated + "A reading: 1.97× HF.\n")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("benchmarks/results/README.md:4:", result.stdout)


if __name__ == "__main__":
    unittest.main()
