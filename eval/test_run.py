"""Tests for eval/run.py: `python3 -m unittest eval/test_run.py` from the repository root."""

import contextlib
import hashlib
import io
import json
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402


def repo(name, framework="candle", half="tune", corpus_file="a.toml"):
    return run.Repo(name, "0" * 40, framework, half, ["."], None, "", corpus_file)


class SplitTest(unittest.TestCase):
    def test_alternates_in_sha256_order_starting_with_tune(self):
        names = ["a/one", "b/two", "c/three", "d/four", "e/five"]
        ordered = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
        halves = run.expected_halves(names)
        self.assertEqual([halves[n] for n in ordered], ["tune", "test", "tune", "test", "tune"])

    def test_split_is_per_file_and_framework(self):
        # a single repository of a framework is always in the tuning half
        repos = [repo("x/y", "tch", "tune", "a.toml"), repo("x/y2", "tch", "tune", "b.toml")]
        self.assertEqual(run.check_split(repos), [])

    def test_a_wrong_half_is_reported(self):
        halves = run.expected_halves(["p/q", "r/s"])
        wrong = [repo(n, half="test" if h == "tune" else "tune") for n, h in halves.items()]
        problems = run.check_split(wrong)
        self.assertEqual(len(problems), 2)
        self.assertIn("split rule puts it in", problems[0])


class MatchTest(unittest.TestCase):
    def test_finding_on_a_known_leak_is_true_and_finds_it(self):
        leak = run.Leak("src/a.rs", 10, "accumulated_loss_tensor", "sum of losses", None)
        f = run.Finding("accumulated_loss_tensor", "src/a.rs", 12, "msg")
        stale = run.match([f], [leak], [])
        self.assertEqual((f.label, stale), ("true", []))
        self.assertEqual(leak.found_by, ["accumulated_loss_tensor@src/a.rs:12"])

    def test_other_rule_or_file_or_far_line_does_not_match(self):
        leak = run.Leak("src/a.rs", 10, "accumulated_loss_tensor", "r", None)
        findings = [
            run.Finding("retained_graph_output", "src/a.rs", 10, "m"),
            run.Finding("accumulated_loss_tensor", "src/b.rs", 10, "m"),
            run.Finding("accumulated_loss_tensor", "src/a.rs", 14, "m"),
        ]
        run.match(findings, [leak], [])
        self.assertEqual([f.label for f in findings], [None, None, None])
        self.assertEqual(leak.found_by, [])

    def test_each_finding_takes_the_nearest_label(self):
        judged = [
            run.Judged("retained_graph_output", "f.rs", 786, "false", "first"),
            run.Judged("retained_graph_output", "f.rs", 787, "unsure", "second"),
        ]
        findings = [run.Finding("retained_graph_output", "f.rs", 786, "m"),
                    run.Finding("retained_graph_output", "f.rs", 787, "m")]
        stale = run.match(findings, [], judged)
        self.assertEqual([(f.label, f.why) for f in findings], [("false", "first"), ("unsure", "second")])
        self.assertEqual(stale, [])

    def test_unmatched_label_is_stale(self):
        judged = [run.Judged("rc_cycle", "t.rs", 5, "false", "gone")]
        self.assertEqual(run.match([], [], judged), judged)

    def test_none_leak_needs_a_finding_not_judged_false(self):
        leak = run.Leak("m.rs", 20, "none", "r", "https://example.invalid/fix")
        false_hit = run.Finding("retained_graph_output", "m.rs", 21, "m")
        judged = [run.Judged("retained_graph_output", "m.rs", 21, "false", "no")]
        run.match([false_hit], [leak], judged)
        self.assertEqual(leak.found_by, [])
        leak2 = run.Leak("m.rs", 20, "none", "r", None)
        true_hit = run.Finding("retained_graph_output", "m.rs", 21, "m")
        run.match([true_hit], [leak2], [run.Judged("retained_graph_output", "m.rs", 21, "true", "yes")])
        self.assertEqual(leak2.found_by, ["retained_graph_output@m.rs:21"])


class ScoreTest(unittest.TestCase):
    def test_precision_ignores_unsure_and_unlabelled(self):
        r = repo("o/n")
        findings = [run.Finding("x", "f", 1, "", "true"), run.Finding("x", "f", 9, "", "false"),
                    run.Finding("x", "f", 20, "", "unsure"), run.Finding("x", "f", 30, "")]
        s = run.score([run.RepoResult(r, findings, [], [], 0, 0.0, [])])
        self.assertEqual((s["true"], s["false"], s["unsure"], s["unlabelled"]), (1, 1, 1, 1))
        self.assertEqual(s["precision"], 0.5)

    def test_second_readers_labels_make_a_strict_precision(self):
        r = repo("o/n")
        findings = [run.Finding("x", "f", 1, "", "true"), run.Finding("x", "f", 9, "", "true"),
                    run.Finding("x", "f", 20, "", "false"), run.Finding("x", "f", 30, "", "true"),
                    run.Finding("x", "f", 40, "", "unsure")]
        seconds = [run.Judged("x", "f", 2, "true", "a"), run.Judged("x", "f", 10, "false", "b"),
                   run.Judged("x", "f", 21, "true", "c"), run.Judged("y", "f", 30, "false", "other rule"),
                   run.Judged("x", "f", 41, "true", "d")]
        run.match_second(findings, seconds)
        self.assertEqual([f.second for f in findings], ["true", "false", "true", None, "true"])
        self.assertEqual([f.strict for f in findings], ["true", "false", "false", "true", "unsure"])
        s = run.score([run.RepoResult(r, findings, [], [], 0, 0.0, [])])
        self.assertEqual((s["read_twice"], s["read_twice_agreed"]), (4, 1))
        self.assertEqual((s["strict"]["true"], s["strict"]["false"], s["strict"]["unsure"]), (2, 2, 1))
        self.assertEqual(s["strict_precision"], 0.5)
        # The first readers' precision is unchanged.
        self.assertEqual(s["precision"], 3 / 4)

    def test_a_third_reader_decides_where_two_differ(self):
        r = repo("o/n")
        findings = [run.Finding("x", "f", 1, "", "true"), run.Finding("x", "f", 20, "", "true"),
                    run.Finding("x", "f", 40, "", "false"), run.Finding("x", "f", 60, "", "true")]
        run.match_second(findings, [run.Judged("x", "f", 1, "true", "a"), run.Judged("x", "f", 20, "false", "b"),
                                    run.Judged("x", "f", 40, "true", "c"), run.Judged("x", "f", 60, "false", "d")])
        run.match_second(findings, [run.Judged("x", "f", 21, "true", "e"), run.Judged("x", "f", 40, "false", "f")],
                         "third")
        # Agreed; third sides with the first; third sides with the first; no third reading.
        self.assertEqual([f.majority for f in findings], ["true", "true", "false", "unsure"])
        s = run.score([run.RepoResult(r, findings, [], [], 0, 0.0, [])])
        self.assertEqual((s["read_thrice"], s["majority"]["true"], s["majority"]["false"]), (2, 2, 1))
        self.assertEqual(s["majority_precision"], 2 / 3)

    def test_wilson_interval_matches_the_textbook_values(self):
        # 4 of 15: 10.9 % to 52.0 % (Wilson, z = 1.96); 0 of 0 has none; 10 of 10 stays below 1.
        low, high = run.wilson(4, 15)
        self.assertAlmostEqual(low, 0.1090, places=3)
        self.assertAlmostEqual(high, 0.5195, places=3)
        self.assertIsNone(run.wilson(0, 0))
        self.assertAlmostEqual(run.wilson(10, 10)[0], 0.7225, places=3)

    def test_precision_per_repository_weighs_each_repository_once(self):
        a = [run.Finding("x", "f", i, "", "false") for i in range(7)]
        b = [run.Finding("x", "f", 1, "", "true"), run.Finding("x", "f", 9, "", "unsure")]
        s = run.score([run.RepoResult(repo("o/a"), a, [], [], 0, 0.0, []),
                       run.RepoResult(repo("o/b"), b, [], [], 0, 0.0, []),
                       run.RepoResult(repo("o/c"), [], [], [], 0, 0.0, [])])
        self.assertEqual((s["repos_judged"], s["repos_only_true"]), (2, 1))
        self.assertEqual(s["precision"], 1 / 8)
        self.assertEqual(s["precision_per_repo_mean"], 0.5)


class InputTest(unittest.TestCase):
    def write(self, folder, name, text):
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8")
        return path

    def test_bad_corpus_entries_are_clear_errors(self):
        cases = {
            'name = "noslash"': "is not owner/name",
            'name = "o/n"\ncommit = "abc"': "40 hex digits",
            'name = "o/n"\ncommit = "' + "a" * 40 + '"\nframework = "jax"\nhalf = "tune"': "framework",
            'name = "o/n"\ncommit = "' + "a" * 40 + '"\nframework = "tch"\nhalf = "tune"\npaths = ["../x"]':
                "inside the repository",
        }
        for body, message in cases.items():
            with tempfile.TemporaryDirectory() as folder:
                self.write(folder, "c.toml", "[[repo]]\n" + body + "\n")
                with self.assertRaises(run.EvalError) as caught:
                    run.load_corpus(Path(folder))
                self.assertIn(message, str(caught.exception))

    def test_bad_label_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as folder:
            self.write(folder, "o__n.toml",
                       '[[finding]]\nrule = "x"\nfile = "f"\nline = 1\nlabel = "maybe"\nreason = "r"\n')
            with self.assertRaises(run.EvalError) as caught:
                run.load_labels(Path(folder), repo("o/n"))
            self.assertIn("label must be one of", str(caught.exception))

    def test_main_reports_a_broken_split_with_status_2(self):
        with tempfile.TemporaryDirectory() as folder:
            names = ["o/a", "o/b"]
            halves = run.expected_halves(names)
            body = "".join(
                f'[[repo]]\nname = "{n}"\ncommit = "{"a" * 40}"\nframework = "tch"\n'
                f'half = "{"test" if halves[n] == "tune" else "tune"}"\n' for n in names
            )
            self.write(folder, "c.toml", body)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                status = run.main(["--corpus-dir", folder, "--checkout-only"])
            self.assertEqual(status, 2)
            self.assertIn("the split rule puts it in", err.getvalue())

    def test_an_unknown_batch_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as folder:
            name = "o/a"
            half = run.expected_halves([name])[name]
            self.write(folder, "c.toml", f'[[repo]]\nname = "{name}"\ncommit = "{"a" * 40}"\nframework = "tch"\nhalf = "{half}"\n')
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                status = run.main(["--corpus-dir", folder, "--checkout-only", "--batch", "corpus_99"])
            self.assertEqual(status, 2)
            self.assertIn("no such corpus file: corpus_99.toml", err.getvalue())

    def test_a_relative_memlint_path_is_resolved_where_the_script_started(self):
        import os
        with tempfile.TemporaryDirectory() as folder:
            before = os.getcwd()
            os.chdir(folder)
            try:
                resolved = run.resolve_binary("target/release/cargo-memlint")
                self.assertEqual(resolved, str(Path(folder).resolve() / "target/release/cargo-memlint"))
                self.assertTrue(Path(resolved).is_absolute())
            finally:
                os.chdir(before)
        self.assertEqual(run.resolve_binary("cargo-memlint"), "cargo-memlint")

    def test_parse_findings_reads_cargo_json_lines(self):
        line = json.dumps({
            "reason": "compiler-message",
            "message": {
                "message": "`total` accumulates a graph-carrying tensor",
                "code": {"code": "memlint::accumulated_loss_tensor"},
                "spans": [
                    {"file_name": "./src/x.rs", "line_start": 4, "is_primary": False},
                    {"file_name": "./src/x.rs", "line_start": 7, "is_primary": True},
                ],
            },
        })
        found = run.parse_findings("not json\n" + line + "\n", Path("."))
        self.assertEqual([(f.rule, f.file, f.line) for f in found],
                         [("accumulated_loss_tensor", "src/x.rs", 7)])
        self.assertEqual(found[0].also, [4])

    def test_a_grouped_finding_matches_at_its_other_places_only_when_its_primary_matches_nothing(self):
        # One finding for a loop's two forward passes (lines 20 and 40): the leak was labelled at
        # the second one.
        leak = run.Leak("src/a.rs", 40, "autodiff_forward_without_backward", "rollout", None)
        grouped = run.Finding("autodiff_forward_without_backward", "src/a.rs", 20, "m", also=[40])
        run.match([grouped], [leak], [])
        self.assertEqual(grouped.label, "true")
        self.assertEqual(leak.found_by, ["autodiff_forward_without_backward@src/a.rs:20"])
        # A label at the primary place wins over a known leak at another place, and a finding
        # judged false there finds no leak through its other places.
        leak = run.Leak("src/a.rs", 40, "autodiff_forward_without_backward", "rollout", None)
        judged = [run.Judged("autodiff_forward_without_backward", "src/a.rs", 21, "false", "valid() model")]
        grouped = run.Finding("autodiff_forward_without_backward", "src/a.rs", 20, "m", also=[40])
        run.match([grouped], [leak], judged)
        self.assertEqual((grouped.label, leak.found_by), ("false", []))

    def test_a_caller_named_in_a_note_finds_the_leak_labelled_there(self):
        # The forward runs in a generic helper; the note names the call that instantiates it with
        # an autodiff backend, where the leak was labelled.
        line = json.dumps({
            "reason": "compiler-message",
            "message": {
                "message": "forward pass on an autodiff model in a loop without backward",
                "code": {"code": "memlint::autodiff_forward_without_backward"},
                "spans": [{"file_name": "src/utils.rs", "line_start": 39, "is_primary": True}],
                "children": [
                    {"level": "help", "message": "run the forward on `model.valid()`"},
                    {"level": "note", "message": "src/main.rs:175: `train` calls this function with an autodiff backend"},
                    {"level": "note", "message": "for more information see https://x/rules.md#r"},
                ],
            },
        })
        [finding] = run.parse_findings(line + "\n", Path("."))
        self.assertEqual(finding.elsewhere, [("src/main.rs", 175)])
        leak = run.Leak("src/main.rs", 175, "autodiff_forward_without_backward", "generation", None)
        judged = [run.Judged("autodiff_forward_without_backward", "src/utils.rs", 39, "true", "the helper")]
        run.match([finding], [leak], judged)
        self.assertEqual(leak.found_by, ["autodiff_forward_without_backward@src/utils.rs:39"])
        # Judged false at its own place, it finds nothing through the note.
        [finding] = run.parse_findings(line + "\n", Path("."))
        leak = run.Leak("src/main.rs", 175, "autodiff_forward_without_backward", "generation", None)
        judged = [run.Judged("autodiff_forward_without_backward", "src/utils.rs", 39, "false", "inner backend")]
        run.match([finding], [leak], judged)
        self.assertEqual(leak.found_by, [])


if __name__ == "__main__":
    unittest.main()


def crate_archive(prefix, files):
    """A gzipped tar like a `.crate`: `files` maps member names (below `prefix`) to text."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(prefix + name if not name.startswith("/") else name.lstrip("/"))
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class CrateSourceTest(unittest.TestCase):
    ENTRY = 'name = "crates.io/tiny-rl"\nversion = "0.2.1"\nchecksum = "{sum}"\nframework = "burn"\nhalf = "tune"\n'

    def corpus(self, folder, checksum):
        (Path(folder) / "c.toml").write_text("[[repo]]\n" + self.ENTRY.format(sum=checksum), encoding="utf-8")
        return run.load_corpus(Path(folder))[0]

    def test_a_crate_entry_is_pinned_by_version_and_checksum(self):
        with tempfile.TemporaryDirectory() as folder:
            entry = self.corpus(folder, "ab" * 32)
        self.assertEqual((entry.crate, entry.version, entry.checksum, entry.commit), ("tiny-rl", "0.2.1", "ab" * 32, ""))
        self.assertEqual((entry.slug, entry.pin), ("crates.io__tiny-rl", "v0.2.1"))
        self.assertIsNone(repo("o/n").crate)

    def test_bad_crate_entries_are_clear_errors(self):
        cases = {
            'name = "crates.io/tiny-rl"\nversion = "0.2"\nchecksum = "' + "a" * 64 + '"': "is not x.y.z",
            'name = "crates.io/tiny-rl"\nversion = "0.2.1"\nchecksum = "abc"': "64 hex digits",
            'name = "crates.io/tiny-rl"\nversion = "0.2.1"\ncommit = "' + "a" * 40 + '"': "not a commit",
            'name = "crates.io/tiny-rl"\nchecksum = "' + "a" * 64 + '"': "missing `version`",
        }
        for body, message in cases.items():
            with tempfile.TemporaryDirectory() as folder:
                (Path(folder) / "c.toml").write_text("[[repo]]\n" + body + '\nframework = "burn"\nhalf = "tune"\n')
                with self.assertRaises(run.EvalError) as caught:
                    run.load_corpus(Path(folder))
                self.assertIn(message, str(caught.exception))

    def test_a_cached_archive_is_checked_and_unpacked_afresh(self):
        data = crate_archive("tiny-rl-0.2.1/", {"Cargo.toml": "[package]\n", "src/lib.rs": "fn f() {}\n",
                                                 "/elsewhere/x.rs": "outside the crate's folder\n"})
        with tempfile.TemporaryDirectory() as folder:
            entry = self.corpus(folder, hashlib.sha256(data).hexdigest())
            cache = Path(folder) / "cache"
            (cache / "crates").mkdir(parents=True)
            (cache / "crates" / "tiny-rl-0.2.1.crate").write_bytes(data)
            tree = run.checkout(entry, cache, Path(folder) / "no-mirrors")
            (tree / "src" / "stray.rs").write_text("left by an earlier run\n")
            tree = run.checkout(entry, cache, Path(folder) / "no-mirrors")
            self.assertEqual(tree, cache / "crates.io__tiny-rl")
            self.assertEqual(sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()),
                             ["Cargo.toml", "src/lib.rs"])

    def test_an_archive_that_does_not_match_its_checksum_is_refused(self):
        data = crate_archive("tiny-rl-0.2.1/", {"src/lib.rs": "fn f() {}\n"})
        with tempfile.TemporaryDirectory() as folder:
            entry = self.corpus(folder, "0" * 64)
            cache = Path(folder) / "cache"
            (cache / "crates").mkdir(parents=True)
            (cache / "crates" / "tiny-rl-0.2.1.crate").write_bytes(data)
            with self.assertRaises(run.EvalError) as caught:
                run.checkout(entry, cache, Path(folder))
            self.assertIn("the corpus pins " + "0" * 64, str(caught.exception))

    def test_a_missing_path_in_the_crate_is_a_clear_error(self):
        data = crate_archive("tiny-rl-0.2.1/", {"src/lib.rs": "fn f() {}\n"})
        with tempfile.TemporaryDirectory() as folder:
            entry = self.corpus(folder, hashlib.sha256(data).hexdigest())
            entry.paths = ["examples"]
            cache = Path(folder) / "cache"
            (cache / "crates").mkdir(parents=True)
            (cache / "crates" / "tiny-rl-0.2.1.crate").write_bytes(data)
            with self.assertRaises(run.EvalError) as caught:
                run.checkout(entry, cache, Path(folder))
            self.assertIn("path `examples` does not exist in v0.2.1", str(caught.exception))
