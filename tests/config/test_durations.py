import pytest

from afd.config.durations import DurationError, format_duration, parse_duration, parse_duration_or_disabled


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("500ms", 0.5),
        ("90s", 90),
        ("2m", 120),
        ("1h30m", 5400),
        ("1h 30m", 5400),
        ("2d", 172800),
        ("1.5h", 5400),
        ("1d2h3m4s5ms", 93784.005),
        ("0", 0),
        ("0s", 0),
        (" 2s ", 2),
    ],
    ids=lambda v: repr(v),
)
def test_parse_duration_reads_units(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_ms_is_milliseconds_not_minutes():
    assert parse_duration("500ms") == 0.5


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty duration"),
        ("30", "has no unit"),
        ("2x", "is not a duration"),
        ("-5s", "is not a duration"),
        ("1h30", "is not a duration"),
        ("h", "is not a duration"),
        ("5 minutes", "is not a duration"),
        ("2S", "is not a duration"),
    ],
    ids=["empty", "number-without-unit", "unknown-unit", "negative", "trailing-number", "unit-only", "words", "upper-case"],
)
def test_parse_duration_refuses_with_a_hint(text, fragment):
    with pytest.raises(DurationError) as info:
        parse_duration(text)
    assert fragment in str(info.value)
    assert "ms, s, m, h, d" in str(info.value)


@pytest.mark.parametrize(
    "text, expected",
    [("0", None), ("", None), ("  ", None), ("0m", None), ("30m", 1800.0)],
    ids=["zero", "empty", "blank", "zero-with-unit", "thirty-minutes"],
)
def test_zero_or_empty_means_disabled(text, expected):
    assert parse_duration_or_disabled(text) == expected


def test_disabled_form_still_refuses_garbage():
    with pytest.raises(DurationError):
        parse_duration_or_disabled("soon")


@pytest.mark.parametrize(
    "seconds, text",
    [(2, "2s"), (0.5, "500ms"), (120, "2m"), (1800, "30m"), (5400, "1h30m"), (172800, "2d"), (0, "0"), (None, "0")],
    ids=lambda v: repr(v),
)
def test_format_duration_is_shortest_form(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [0.001, 1, 59, 61, 3599, 3601, 86399, 90061.25])
def test_format_then_parse_round_trips(seconds):
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)
