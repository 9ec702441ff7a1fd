"""An error line of ``rxturn chat`` / ``rxturn batch run`` names what its user typed: the flag
(``--base-url``, ``--thinking``, ``--reasoning-effort``) and the variable a key is read from,
never the Python API's parameters (``base_url``, ``RequestOptions.thinking``, ``api_key=``),
which a CLI user has no way to pass. In-process; nothing is sent (no server is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxturn.cli import main

PYTHON_WORDS = (
    "base_url",
    "api_key",
    "RequestOptions",
    "thinking=",
    "reasoning_effort",
    "media_type=",
)


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.splitlines()
    return line


BASE_URL_CASES = [
    ("ftp://x", "--base-url must be an absolute http(s) URL"),
    ("http://user:pw@h", "--base-url must not contain credentials; set ANTHROPIC_API_KEY instead"),
    ("http://h/?key=1", "an API key goes in ANTHROPIC_API_KEY"),
    ("http://h:99999", "--base-url 'http://h:99999' is not a valid URL"),
]


@pytest.mark.parametrize(("url", "said"), BASE_URL_CASES, ids=[u for u, _ in BASE_URL_CASES])
@pytest.mark.parametrize("command", ["chat", "batch"])
def test_a_bad_base_url_is_named_as_the_flag(
    command: str,
    url: str,
    said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    common = ["--provider", "anthropic", "--model", "m", "--base-url", url]
    if command == "chat":
        argv = ["chat", *common, "hi"]
    else:
        rows = tmp_path / "in.jsonl"
        rows.write_text('{"id": "a", "prompt": "hi"}\n')
        argv = ["batch", "run", *common, str(rows), "-o", str(tmp_path / "out.jsonl")]
    line = _error(capsys, argv)
    assert said in line
    assert not any(word in line for word in PYTHON_WORDS), line
    if command == "batch":
        assert not (tmp_path / "out.jsonl").exists()  # refused before the output was touched


def test_ollama_has_no_key_to_point_at(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(
        capsys, ["chat", "--provider", "ollama", "--model", "m", "--base-url", "http://u:p@h", "hi"]
    )
    assert "--base-url must not contain credentials; the ollama provider sends no API key" in line


@pytest.mark.parametrize(
    ("provider", "flags", "said"),
    [
        (
            "anthropic",
            ["--reasoning-effort", "high"],
            "--reasoning-effort is OpenAI's reasoning knob",
        ),
        ("anthropic", ["--reasoning-effort", "high"], "(use --thinking N)"),
        ("openai", ["--thinking", "2000"], "--thinking is Anthropic's extended-thinking budget"),
        ("openai", ["--thinking", "2000"], "(use --reasoning-effort)"),
        ("openai-responses", ["--thinking", "2000"], "(use --reasoning-effort)"),
    ],
)
def test_a_knob_the_provider_cannot_take_is_named_as_the_flag(
    provider: str,
    flags: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    argv = ["chat", "--provider", provider, "--model", "m", "--base-url", "http://127.0.0.1:9"]
    line = _error(capsys, [*argv, *flags, "hi"])
    assert said in line
    assert not any(word in line for word in PYTHON_WORDS), line


def test_a_file_of_no_known_type_says_what_a_cli_user_can_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = tmp_path / "notes"
    unknown.write_bytes(b"\x00\x01\x02")
    argv = ["chat", "--provider", "ollama", "--model", "m", "--base-url", "http://127.0.0.1:9"]
    line = _error(capsys, [*argv, "--file", str(unknown), "hi"])
    assert "cannot tell its media type" in line and "extension" in line
    assert "media_type=" not in line


@pytest.mark.parametrize("command", ["chat", "batch"])
def test_no_key_for_the_providers_own_host_names_the_variable(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # --base-url naming the provider's own host: the client wants a key (said before sending)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    common = ["--provider", "openai", "--model", "m", "--base-url", "https://api.openai.com/v1"]
    if command == "chat":
        argv = ["chat", *common, "hi"]
    else:
        rows = tmp_path / "in.jsonl"
        rows.write_text('{"id": "a", "prompt": "hi"}\n')
        argv = ["batch", "run", *common, str(rows), "-o", str(tmp_path / "out.jsonl")]
    line = _error(capsys, argv)
    assert line.endswith(": set OPENAI_API_KEY")
    assert "api_key" not in line
