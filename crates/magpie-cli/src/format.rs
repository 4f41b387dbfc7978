//! How the tool writes what it measured: seconds, ratios, nanoseconds, durations, dates, counts
//! and a kernel's answer line. One home for each, so the suite, `bench`, `report`, `corun`,
//! `trace` and the progress lines of `measure/` write the same figure the same way.

/// Seconds with microsecond resolution, or `–` when absent.
pub(crate) fn secs(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:.6}"))
}

/// A ratio as `N.NN×` (three decimals below 0.1, so small ratios keep two digits), or `–`.
pub(crate) fn times(x: Option<f64>) -> String {
    match x {
        Some(x) if x < 0.1 => format!("{x:.3}×"),
        Some(x) => format!("{x:.2}×"),
        None => "–".into(),
    }
}

/// Nanoseconds with one decimal, or `–`.
pub(crate) fn nanos(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:.1}"))
}

/// A duration in seconds as µs, ms or s with three or four significant digits.
pub(crate) fn duration(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// A kernel's answer as the tables and index.html show it: `result: <answer>`.
pub(crate) fn result_line(answer: Option<&str>) -> String {
    match answer {
        Some(a) => format!("result: {a}"),
        None => "result: – (no run verified)".into(),
    }
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub(crate) fn utc_date(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// `1 steal`, `2 steals`.
pub(crate) fn count(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_date(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(duration(0.0000062), "6.2 µs");
        assert_eq!(duration(0.0123456), "12.346 ms");
        assert_eq!(duration(2.5), "2.500 s");
    }

    #[test]
    fn ratios_keep_two_digits() {
        assert_eq!(times(Some(1.234)), "1.23×");
        assert_eq!(times(Some(0.0456)), "0.046×");
        assert_eq!(times(None), "–");
    }
}
