"""Every number ``batch run`` takes, given what no provider can use (negative, zero, not a
number, infinite, beyond what the field or the budget's arithmetic holds): exit 2 before
anything is touched, one line that names the flag and the range, never the whole of a pasted
number; in-process (argparse refuses it: nothing is sent, no file is made). And the names:
an empty file name or model is named by its flag."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rxturn.batch import BatchConfig
from rxturn.batch._budget import Budget
from rxturn.cli import main
from rxturn.errors import ConfigError

HUGE = str(10**400)  # more digits than Python converts to an int by default

NUMBERS = {
    "--max-tokens": (
        ["-5", "0", "nan", "inf", "1e12", "1.5", "", "2147483648", HUGE],
        "2147483647",
    ),
    "--rpm": (["-1", "0", "nan", "1.5", "1000000000000001", HUGE], "10**15"),
    "--tpm": (["-1", "0", "nan", "inf", "1000000000000001", HUGE], "10**15"),
    "--concurrency": (["-1", "0", "nan", "10001", HUGE], "10000"),
    "--workers": (["-1", "0", "nan", "257", HUGE], "256"),
    "--temperature": (["-5", "nan", "inf", "1e400", "abc", "", HUGE + "e9"], ">= 0"),
}


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [(flag, value, said) for flag, (values, said) in NUMBERS.items() for value in values],
)
def test_a_number_no_provider_can_use_is_refused_in_one_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, said: str
) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    args = ["batch", "run", str(inp), "-o", str(out), "--provider", "openai", "--model", "m"]
    with pytest.raises(SystemExit) as exited:
        main([*args, "--base-url", "http://127.0.0.1:1", f"{flag}={value}"])
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = captured.err
    assert line.startswith(f"rxturn batch run: error: argument {flag}: expected ")
    assert said in line and line.count("\n") == 1 and len(line) < 200
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]


def test_minus_zero_degrees_is_zero(tmp_path: Path) -> None:
    from rxturn.cli._console import number_argument  # --temperature's type

    value = number_argument("-0")
    assert value == 0.0 and str(value) == "0.0"  # one manifest for 0 and -0, no "-0.0" sent


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"max_tokens": 2**31}, "max_tokens must be at most 2147483647"),
        ({"rpm": 10**15 + 1}, "rpm must be at most 10**15"),
        ({"tpm": 10**400}, "tpm must be at most 10**15"),
        # past the 4300 digits Python prints: the error line itself raised ValueError
        ({"max_tokens": 10**5000}, "max_tokens must be at most 2147483647"),
        ({"tpm": -(10**5000)}, "tpm must be an integer >= 1"),
    ],
)
def test_the_api_refuses_the_same_numbers(fields: dict[str, int], words: str) -> None:
    with pytest.raises(ConfigError, match=r"^" + words.replace("*", r"\*")) as caught:
        BatchConfig(provider="openai", model="m", **fields).check()  # pyright: ignore[reportArgumentType]
    assert len(str(caught.value)) < 200


def test_a_budget_refuses_a_limit_beyond_its_arithmetic() -> None:
    """Where Ray's budget actor and TurnUDF build theirs: a float overflow deep inside
    before."""
    with pytest.raises(ConfigError, match=r"^tpm must be at most 10\*\*15"):
        Budget(tpm=10**400)
    assert Budget(rpm=10**15, tpm=10**15).tpm == 10**15


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "", "-o", "out.jsonl"], "rxturn batch run: error: argument INPUT.jsonl: "),
        (["run", "in.jsonl", "-o", ""], "rxturn batch run: error: argument -o/--output: "),
        (["status", ""], "rxturn batch status: error: argument OUT.jsonl: "),
        (["export", "out.jsonl", "--input", ""], "rxturn batch export: error: argument --input: "),
    ],
    ids=["run-input", "run-output", "status", "export"],
)
def test_an_empty_file_name_is_named_as_such(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    said: str,
) -> None:
    """An empty name (an unset shell variable) is no file: it read as the current directory,
    and the error named '.' instead."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "x"}\n')
    extra = ["--provider", "openai", "--model", "m", "--base-url", "http://127.0.0.1:1"]
    with pytest.raises(SystemExit) as exited:
        main(["batch", *args, *(extra if args[0] == "run" else [])])
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"{said}expected a file name, got ''\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize("flag", ["--model", "--fallback"])
@pytest.mark.parametrize(
    ("name", "said"),
    [
        (" ", "must not be empty"),
        ("m\x1b[31m", "holds a control character; nothing was sent"),
        ("m\nline2", "holds a control character; nothing was sent"),
        ("m\x9b2J", "holds a control character; nothing was sent"),
    ],
    ids=["blank", "escape", "newline", "c1"],
)
def test_a_bad_model_name_is_named_by_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, name: str, said: str
) -> None:
    """A name with a control character reached the summary and error lines raw (an escape
    sequence to the terminal, a newline splitting the line)."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    args = ["batch", "run", str(inp), "-o", str(tmp_path / "out.jsonl"), "--provider", "ollama"]
    models = ["--model", name] if flag == "--model" else ["--model", "m", "--fallback", name]
    assert main([*args, *models, "--base-url", "http://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == f"rxturn batch: error: {flag} {said}\n"
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("model", [" m ", "m\n", "\tm"], ids=["spaces", "newline", "tab"])
def test_a_padded_model_name_is_sent_stripped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    """Read stripped by the checks (as ``chat`` reads it), a padded ``--model`` (a pasted
    ``'$MODEL '``) went out padded, for every row to fail on the provider's 404."""
    from tests.cli._support import ThreadedFake

    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    with ThreadedFake({"models": {"m": [{"text": "served"}], "*": [{"status": 404}]}}) as fake:
        args = ["batch", "run", str(inp), "-o", str(tmp_path / "out.jsonl"), "--provider"]
        args += ["ollama", "--base-url", fake.base_url, "--progress", "none"]
        code = main([*args, "--model", model])
        asked = [record.model for record in fake.records]
    capsys.readouterr()
    assert (code, asked) == (0, ["m"])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "in.jsonl", "-o", "-"], "rxturn batch run: error: argument -o/--output: "),
        (["status", "-"], "rxturn batch status: error: argument OUT.jsonl: "),
        (
            ["export", "-", "--input", "in.jsonl"],
            "rxturn batch export: error: argument OUT.jsonl: ",
        ),
    ],
    ids=["run", "status", "export"],
)
def test_a_dash_for_the_output_is_refused_and_no_file_named_dash_is_made(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    said: str,
) -> None:
    """``-o -`` reads as stdout, as ``-`` for INPUT is stdin; the output is the checkpoint the
    next run reads back, which stdout cannot be. It wrote a file named ``-`` (and ``-.lock``,
    ``-.manifest.json``) in the current directory and printed nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "x"}\n')
    extra = ["--provider", "openai", "--model", "m", "--base-url", "http://127.0.0.1:1"]
    with pytest.raises(SystemExit) as exited:
        main(["batch", *args, *(extra if args[0] == "run" else [])])
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(said) and "'-' (stdout)" in captured.err
    assert captured.err.count("\n") == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize("address", ["http://127.0.0.1:8265", "ray://http://127.0.0.1:10001"])
def test_a_ray_address_of_another_scheme_is_refused_as_no_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: str
) -> None:
    """The dashboard's ``http://HOST:8265`` (what ``ray job submit`` takes) was looked up as the
    host name ``http://HOST``: exit 1, "cannot reach the Ray cluster … (Name or service not
    known)", as if the cluster were down. It is no address ``--ray`` takes (no Ray is needed
    to say so)."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    args = ["batch", "run", str(inp), "-o", str(out), "--provider", "openai", "--model", "m"]
    assert main([*args, "--base-url", "http://127.0.0.1:1", "--ray", address]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"rxturn batch: error: --ray takes auto, HOST:PORT or ray://HOST:PORT, got {address!r}\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]


def test_ray_not_installed_is_said_before_the_output_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--ray`` without the extra was refused (exit 2) only once the run had made its output,
    lock and manifest: a first run refused leaves no file, as docs/batch.md says."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # (auto: no address to look at)
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    args = ["batch", "run", str(inp), "-o", str(out), "--provider", "openai", "--model", "m"]
    assert main([*args, "--base-url", "http://127.0.0.1:1", "--ray", "auto"]) == 2
    assert capsys.readouterr().err == (
        "rxturn batch: error: Ray is not installed: pip install 'rxturn[ray]' (it brings "
        "ray[data])\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize("command", ["run", "status", "export"])
def test_an_output_name_ending_in_a_slash_is_no_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """``-o results/`` (a directory that does not exist yet) wrote a file named ``results``:
    a path drops the slash. The name says a directory, so it is refused before anything is
    touched."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "x"}\n')
    args = {
        "run": ["run", "in.jsonl", "-o", "results/", "--provider", "openai", "--model", "m"],
        "status": ["status", "results/"],
        "export": ["export", "results/", "--input", "in.jsonl"],
    }[command]
    with pytest.raises(SystemExit) as exited:
        main(["batch", *args, *(["--base-url", "http://127.0.0.1:1"] if command == "run" else [])])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        "'results/' names a directory: OUT is a file (such as 'results/answers.jsonl')\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_symlink_into_a_directory_that_does_not_exist_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An output that is a symlink to a file in a missing directory was exit 1, "cannot create
    the lock '…/gone/out.jsonl.lock': No such file or directory": the directory checked was
    the link's, not the one its file is written in."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    link = tmp_path / "latest.jsonl"
    link.symlink_to(tmp_path / "gone" / "out.jsonl")
    args = ["batch", "run", str(inp), "-o", str(link), "--provider", "openai", "--model", "m"]
    assert main([*args, "--base-url", "http://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == (
        f"rxturn batch: error: cannot write {str(link)!r}: the directory "
        f"{str(tmp_path / 'gone')!r} does not exist\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl", "latest.jsonl"]
