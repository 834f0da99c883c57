//! JUnit XML for `check`, as CI systems render it: one `<testsuite>` per file, one `<testcase>` per
//! rule of the catalog (name = rule ID, classname = file). A rule with findings at or above
//! fail-on is a `<failure>` listing the count and the frames; an allowed rule is `<skipped>`; a
//! file that cannot be read is one test case with an `<error>`.

use std::fmt::Write as _;

use super::check::{lines, FileResult, Policy, Verdict};
use crate::proto::Rule;
use crate::tally::summary::MAX_FRAMES;

/// The JUnit document for all files.
pub fn write(results: &[FileResult], policy: &Policy) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures, mut errors, mut skipped) = (0usize, 0usize, 0usize, 0usize);
    for r in results {
        let path = escape(&r.path);
        let Ok(counts) = &r.outcome else {
            let message = escape(r.outcome.as_ref().err().map_or("", String::as_str));
            let _ = write!(
                suites,
                "  <testsuite name=\"{path}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n    \
                 <testcase name=\"capture.read\" classname=\"{path}\">\n      \
                 <error message=\"cannot be read: {message}\" type=\"read\"/>\n    </testcase>\n  </testsuite>\n"
            );
            tests += 1;
            errors += 1;
            continue;
        };
        let lines = lines(counts, policy);
        let fails = lines.iter().filter(|l| l.verdict == Verdict::Fail).count();
        let skips = lines
            .iter()
            .filter(|l| l.verdict == Verdict::Allowed)
            .count();
        let _ = writeln!(
            suites,
            "  <testsuite name=\"{path}\" tests=\"{}\" failures=\"{fails}\" errors=\"0\" skipped=\"{skips}\">",
            lines.len()
        );
        for l in &lines {
            let info = l.rule.info();
            // A broken budget says which conversation, what was measured, and where.
            let budgets: String = r
                .budgets
                .iter()
                .filter(|b| b.rule == l.rule)
                .map(|b| {
                    format!(
                        "\nconversation #{} {}: {} at frames {}-{} ({})",
                        b.conversation,
                        b.client,
                        b.comparison(),
                        b.first_frame,
                        b.last_frame,
                        b.what
                    )
                })
                .collect();
            let _ = write!(
                suites,
                "    <testcase name=\"{}\" classname=\"{path}\">",
                escape(info.id)
            );
            let found = format!("{} finding{}", l.count, if l.count == 1 { "" } else { "s" });
            match l.verdict {
                Verdict::Pass => {}
                Verdict::Fail => {
                    // What a CI summary shows of a failure: the measure against its limit for a
                    // budget, else how many findings and where the first is.
                    let mut broken = r.budgets.iter().filter(|b| b.rule == l.rule);
                    let message = match broken.next() {
                        Some(b) => {
                            let more = broken.count();
                            let more = match more {
                                0 => String::new(),
                                n => format!(" (and {n} more)"),
                            };
                            format!(
                                "{} in conversation #{} at frames {}-{}{more}",
                                b.comparison(),
                                b.conversation,
                                b.first_frame,
                                b.last_frame
                            )
                        }
                        None => format!(
                            "{found} ({}), the first at frame {}",
                            info.severity.name(),
                            l.frames.first().map_or_else(|| "-".into(), u64::to_string)
                        ),
                    };
                    let body = format!(
                        "{} [{}]: {}\nframes: {}{budgets}",
                        info.id,
                        info.section,
                        info.summary,
                        l.frames_text(MAX_FRAMES)
                    );
                    let _ = write!(
                        suites,
                        "\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    ",
                        escape(&message),
                        info.severity.name(),
                        escape(&body)
                    );
                }
                Verdict::Allowed => {
                    let message = if l.count == 0 {
                        "allowed (no findings)".to_string()
                    } else {
                        format!("allowed ({found})")
                    };
                    let _ = write!(
                        suites,
                        "\n      <skipped message=\"{}\"/>\n    ",
                        escape(&message)
                    );
                }
                Verdict::Below => {
                    let out = format!(
                        "{found} ({}, below fail-on) at frames {}{budgets}",
                        info.severity.name(),
                        l.frames_text(MAX_FRAMES)
                    );
                    let _ = write!(
                        suites,
                        "\n      <system-out>{}</system-out>\n    ",
                        escape(&out)
                    );
                }
            }
            suites += "</testcase>\n";
        }
        suites += "  </testsuite>\n";
        tests += Rule::all().len();
        failures += fails;
        skipped += skips;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"rtype-inspect check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">\n\
         {suites}</testsuites>\n"
    )
}

/// Text made safe for XML 1.0 attributes and content: the five special characters as entities,
/// and characters XML 1.0 cannot carry at all (most C0 controls, U+FFFE, U+FFFF) as U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out += "&amp;",
            '<' => out += "&lt;",
            '>' => out += "&gt;",
            '"' => out += "&quot;",
            '\'' => out += "&apos;",
            // Kept as references so attribute values keep them (raw ones are normalised to spaces).
            '\t' => out += "&#9;",
            '\n' => out += "&#10;",
            '\r' => out += "&#13;",
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_drops_what_xml_cannot_carry() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{1}y\nz\u{FFFF}"), "x\u{FFFD}y&#10;z\u{FFFD}");
        assert_eq!(escape("caf\u{e9} …"), "caf\u{e9} …");
    }
}
