//! `rtype-inspect check FILE...`: judges captures for CI.
//!
//! Exit 0 when no finding reaches `--fail-on` (error by default), 1 when one does, 2 when a file
//! cannot be read or the arguments (or the config file) are wrong; unreadable files do not stop
//! the others from being judged and reported. A team adopts the check on an imperfect
//! implementation by allowing rules (`--allow ID`, or the config file), then tightens it.
//!
//! The configuration file (`rtype-inspect.toml`, see [`crate::app::config`]) gives `fail_on` and
//! `allow` defaults; command-line options win over the file, and allow-lists add up. Its
//! `[budgets]` table makes the check profile each capture too ([`super::profile`]) and judge
//! every conversation against the budgets: a broken one is a finding of a `budget.*` rule.

use std::path::PathBuf;
use std::process::ExitCode;

use schemars::JsonSchema;
use serde::Serialize;

use super::profile::Profiler;
use super::{table, Tool};
use crate::app::config::unknown_rules;
use crate::app::inputs::{parallel, InputArgs};
use crate::app::{read_capture, write_stdout, ReadOpts, Reading, Term};
use crate::message::NoFields;
use crate::pipeline::{RunEnd, Sink, Watch, Watched, MIXED_LAYOUTS};
use crate::proto::{Rule, Severity};
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::tally::budget::{self, BrokenBudget, BudgetBreak};
use crate::tally::summary::{RuleCounts, MAX_FRAMES};

/// Frames listed per rule in the text report (JSON and JUnit list up to [`MAX_FRAMES`]).
const TEXT_FRAMES: usize = 8;

/// The lowest severity that fails the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    Error,
    Warning,
    Info,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Info => Severity::Info,
        }
    }
}

/// The form of the check's report (`cli::args` describes each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckFormat {
    Text,
    Json,
    Junit,
}

/// `rtype-inspect check`'s options, as `cli::args` parsed them.
pub struct CheckOptions {
    pub inputs: InputArgs,
    pub fail_on: Option<FailOn>,
    pub allow: Vec<String>,
    pub format: CheckFormat,
    pub read: ReadOpts,
}

/// What the check judges by, once arguments and config file are merged.
#[derive(Clone, Debug)]
pub struct Policy {
    pub fail_on: Severity,
    /// Indexed by rule.
    allowed: Vec<bool>,
    /// The config file that was read, if any.
    pub config: Option<PathBuf>,
}

impl Policy {
    pub fn allowed(&self, rule: Rule) -> bool {
        self.allowed[rule.index()]
    }

    /// Allowed rule IDs, in catalog order.
    pub fn allowed_ids(&self) -> Vec<&'static str> {
        Rule::all()
            .iter()
            .filter(|r| self.allowed(**r))
            .map(|r| r.id())
            .collect()
    }

    pub fn verdict(&self, rule: Rule, count: u64) -> Verdict {
        if self.allowed(rule) {
            Verdict::Allowed
        } else if count == 0 {
            Verdict::Pass
        } else if rule.severity() >= self.fail_on {
            Verdict::Fail
        } else {
            Verdict::Below
        }
    }
}

/// What became of one rule in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No findings.
    Pass,
    /// Findings at or above fail-on.
    Fail,
    /// Findings below fail-on: reported, not failing.
    Below,
    /// Allowed: never fails, whatever its findings.
    Allowed,
}

impl Verdict {
    pub const fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Below => "below fail-on",
            Verdict::Allowed => "allowed",
        }
    }
}

/// Counts findings per rule, keeping the first frames of each.
#[derive(Default)]
pub struct Judge {
    pub rules: RuleCounts,
    /// The snapshot profile the conversations were read with ([`RunEnd::profile`]).
    pub profile: String,
    no_fields: NoFields,
}

impl Sink for Judge {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        for f in e.findings {
            self.rules.add_finding(f, e.frame);
        }
    }
    fn loose(&mut self, f: &LooseFinding) {
        self.rules.add_finding(&f.finding, f.frame);
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        nothing_judged(end, &mut self.rules);
        self.profile = end.profile.to_string();
    }
}

/// A display filter that passed no datagram left nothing judged: `capture.no-datagrams`, as for
/// a capture without any, so that a gate on the wrong filter fails instead of passing on nothing.
fn nothing_judged(end: &RunEnd<'_>, rules: &mut RuleCounts) {
    if end.displayed.is_some_and(|(_, shown)| shown == 0)
        && rules.get(Rule::CaptureNoDatagrams).count == 0
    {
        rules.add(Rule::CaptureNoDatagrams, end.read.frames);
    }
}

/// Counts findings per rule while another sink makes its report (the profile, for budgets).
#[derive(Default)]
struct Counted {
    rules: RuleCounts,
    profile: String,
}

impl Watch for Counted {
    fn datagram(&mut self, e: &DatagramEvent<'_>, shown: bool) -> bool {
        if shown {
            for f in e.findings {
                self.rules.add_finding(f, e.frame);
            }
        }
        true
    }
    fn loose(&mut self, f: &LooseFinding) {
        self.rules.add_finding(&f.finding, f.frame);
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        nothing_judged(end, &mut self.rules);
        self.profile = end.profile.to_string();
    }
}

/// One judged file: its findings, or why it could not be read; and the budgets it broke.
pub struct FileResult {
    pub path: String,
    pub outcome: Result<RuleCounts, String>,
    pub budgets: Vec<BudgetBreak>,
    /// The snapshot profile the file was read with: named, or the layout found for it.
    pub profile: Option<String>,
}

impl FileResult {
    /// 0 passed, 1 failed, 2 unreadable.
    pub fn exit_code(&self, policy: &Policy) -> u8 {
        match &self.outcome {
            Err(_) => 2,
            Ok(counts) => u8::from(
                Rule::all()
                    .iter()
                    .any(|r| policy.verdict(*r, counts.get(*r).count) == Verdict::Fail),
            ),
        }
    }
}

/// Runs `rtype-inspect check`.
pub fn run(options: CheckOptions, term: Term) -> Result<ExitCode, String> {
    // A gate that judged nothing must not pass: no capture found is an error (exit 2).
    let inputs = options.inputs.captures("check")?.inputs;
    let mut reading = options.read.reading()?;
    reading.count = options.inputs.count;
    // The gate judges what every report may not: whether the clients of one server agree.
    reading.analysis.compare_clients = true;
    let policy = policy(&options, &reading)?;
    let budgets = reading.config.budgets;
    // Files are judged side by side; what each says (its error too) comes in argument order.
    // Each gets a copy of the settings (the display filter keeps caches).
    let (at_once, reading) = reading.share(inputs.len());
    let settings = std::sync::Mutex::new(reading);
    let results = parallel(&inputs, at_once, |input| {
        let reading = settings.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let file = &input.path;
        let path = file.display().to_string();
        // The configuration's [profiles] table gives each file its profile.
        let reading = match reading.for_file(file) {
            Ok(reading) => reading,
            Err(e) => {
                return FileResult {
                    outcome: Err(e),
                    path,
                    budgets: Vec::new(),
                    profile: None,
                }
            }
        };
        let (outcome, broken) = if budgets.is_empty() {
            let mut judge = Judge::default();
            (
                read_capture(file, &reading, &mut judge).map(|()| (judge.rules, judge.profile)),
                Vec::new(),
            )
        } else {
            judge_budgets(file, &reading, &budgets)
        };
        let (outcome, profile) = match outcome {
            Ok((rules, profile)) => (Ok(rules), Some(profile)),
            Err(e) => (Err(e), None),
        };
        FileResult {
            profile,
            outcome: outcome.map_err(|e| {
                // The reader's messages start with the path, which the reports already show.
                e.strip_prefix(&format!("{path}: "))
                    .map_or(e.clone(), str::to_owned)
            }),
            path,
            budgets: broken,
        }
    });
    for r in &results {
        if let Err(e) = &r.outcome {
            eprintln!("rtype-inspect: {}: {e}", r.path);
        }
    }
    let code = results
        .iter()
        .map(|r| r.exit_code(&policy))
        .max()
        .unwrap_or(0);
    let out = match options.format {
        CheckFormat::Text => text(&results, &policy, code, term),
        CheckFormat::Json => {
            serde_json::to_string_pretty(&to_json(&results, &policy, code)).unwrap_or_default()
                + "\n"
        }
        CheckFormat::Junit => super::junit::write(&results, &policy),
    };
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::from(code))
}

/// Reads a capture with its profile, and judges the profile against `budgets`: the findings
/// per rule (budget breaks among them, at their worst window's first frame) and the breaks.
fn judge_budgets(
    file: &std::path::Path,
    reading: &Reading,
    budgets: &crate::app::config::Budgets,
) -> (Result<(RuleCounts, String), String>, Vec<BudgetBreak>) {
    let mut reading = reading.clone();
    reading.analysis.entity_figures = true;
    let mut profiler = Profiler::new(&file.display().to_string(), &reading, 1_000_000_000);
    let mut counted = Watched {
        sink: &mut profiler,
        watch: Counted::default(),
    };
    if let Err(e) = read_capture(file, &reading, &mut counted) {
        return (Err(e), Vec::new());
    }
    let (mut rules, profile) = (counted.watch.rules, counted.watch.profile);
    let broken = profiler
        .json()
        .map(|j| budget::judge(j, budgets))
        .unwrap_or_default();
    for b in &broken {
        rules.add(b.rule, b.first_frame);
    }
    (Ok((rules, profile)), broken)
}

/// Merges the command line with the configuration file's `fail_on` and `allow`.
fn policy(options: &CheckOptions, reading: &Reading) -> Result<Policy, String> {
    let config = &reading.config;
    let fail_on = options
        .fail_on
        .map(FailOn::severity)
        .or(config.fail_on)
        .unwrap_or(Severity::Error);
    let mut allowed = vec![false; Rule::all().len()];
    for rule in &config.allow {
        allowed[rule.index()] = true;
    }
    let mut unknown = Vec::new();
    for id in &options.allow {
        match Rule::from_id(id) {
            Some(rule) => allowed[rule.index()] = true,
            None => unknown.push(id.as_str()),
        }
    }
    if !unknown.is_empty() {
        return Err(unknown_rules("--allow", &unknown));
    }
    Ok(Policy {
        fail_on,
        allowed,
        config: config.path.clone(),
    })
}

/// Findings of one rule in one file, for the reports.
pub struct RuleLine {
    pub rule: Rule,
    pub count: u64,
    /// Sorted; at most [`MAX_FRAMES`].
    pub frames: Vec<u64>,
    pub verdict: Verdict,
}

impl RuleLine {
    /// Frames as `1, 2, 3, …` with at most `limit` listed.
    pub fn frames_text(&self, limit: usize) -> String {
        let mut s: Vec<String> = self.frames.iter().take(limit).map(u64::to_string).collect();
        if self.count > s.len() as u64 {
            s.push("…".into());
        }
        s.join(", ")
    }
}

/// Every rule of the catalog for one file's counts, in catalog order.
pub fn lines(counts: &RuleCounts, policy: &Policy) -> Vec<RuleLine> {
    Rule::all()
        .iter()
        .map(|&rule| {
            let count = counts.get(rule).count;
            let mut frames = counts.frames(rule).to_vec();
            frames.sort_unstable();
            frames.dedup();
            RuleLine {
                rule,
                count,
                frames,
                verdict: policy.verdict(rule, count),
            }
        })
        .collect()
}

/// A file's result, or the whole check's.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Pass,
    Fail,
    Error,
}

impl Outcome {
    fn of(code: u8) -> Outcome {
        match code {
            0 => Outcome::Pass,
            1 => Outcome::Fail,
            _ => Outcome::Error,
        }
    }
}

/// The schema of `check --format json` (docs/schemas/check.schema.json).
pub const SCHEMA: &str = "check/1";

/// The document `rtype-inspect check FILE... --format json` writes: the policy, each capture's
/// findings with their verdicts and the budgets it broke, and the result.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect check", deny_unknown_fields)]
pub struct Check<'a> {
    allow: Vec<&'static str>,
    config: Option<String>,
    /// 0 pass, 1 fail, 2 error.
    #[schemars(range(max = 2))]
    exit_code: u8,
    #[schemars(schema_with = "super::severity_schema")]
    fail_on: Severity,
    files: Vec<FileJson<'a>>,
    max_frames: usize,
    result: Outcome,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
}

/// One capture checked.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FileJson<'a> {
    /// Each budget broken.
    budgets: Vec<BrokenBudget<'a>>,
    error: Option<&'a str>,
    file: &'a str,
    findings: Vec<Finding>,
    /// The snapshot profile the file was read with: `document`, the one named, or the bundled one
    /// its snapshots were found to fit (absent when it could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    profile: Option<&'a str>,
    result: Outcome,
}

/// The findings of one rule in one capture.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Finding {
    count: u64,
    frames: Vec<u64>,
    frames_complete: bool,
    id: &'static str,
    #[schemars(schema_with = "super::severity_schema")]
    severity: Severity,
    verdict: &'static str,
}

fn to_json<'a>(results: &'a [FileResult], policy: &Policy, code: u8) -> Check<'a> {
    let file = |r: &'a FileResult| match &r.outcome {
        Err(e) => FileJson {
            budgets: Vec::new(),
            error: Some(e),
            file: &r.path,
            findings: Vec::new(),
            profile: None,
            result: Outcome::Error,
        },
        Ok(counts) => FileJson {
            budgets: r.budgets.iter().map(|b| b.written(false)).collect(),
            error: None,
            file: &r.path,
            findings: (lines(counts, policy).into_iter())
                .filter(|l| l.count > 0)
                .map(|l| Finding {
                    count: l.count,
                    frames_complete: l.count <= l.frames.len() as u64,
                    frames: l.frames,
                    id: l.rule.id(),
                    severity: l.rule.severity(),
                    verdict: l.verdict.name(),
                })
                .collect(),
            profile: r.profile.as_deref(),
            result: Outcome::of(r.exit_code(policy)),
        },
    };
    Check {
        allow: policy.allowed_ids(),
        config: policy.config.as_ref().map(|p| p.display().to_string()),
        exit_code: code,
        fail_on: policy.fail_on,
        files: results.iter().map(file).collect(),
        max_frames: MAX_FRAMES,
        result: Outcome::of(code),
        schema: SCHEMA,
        tool: Tool::THIS,
    }
}

fn text(results: &[FileResult], policy: &Policy, code: u8, term: Term) -> String {
    let mut out = String::new();
    let allowed = policy.allowed_ids();
    out += &format!(
        "check: failing on {} and above{}{}\n",
        policy.fail_on.name(),
        if allowed.is_empty() {
            String::new()
        } else {
            format!("; allowed: {}", allowed.join(", "))
        },
        policy
            .config
            .as_ref()
            .map_or_else(String::new, |p| format!("; config {}", p.display())),
    );
    let mut tally = [0usize; 3];
    for r in results {
        let file_code = r.exit_code(policy);
        tally[usize::from(file_code.min(2))] += 1;
        match &r.outcome {
            Err(e) => out += &format!("\n{}: ERROR, cannot be read: {e}\n", r.path),
            Ok(counts) => {
                let found: Vec<RuleLine> = lines(counts, policy)
                    .into_iter()
                    .filter(|l| l.count > 0)
                    .collect();
                let failing = found.iter().filter(|l| l.verdict == Verdict::Fail).count();
                let head = if failing > 0 {
                    format!(
                        "FAIL ({failing} rule{})",
                        if failing == 1 { "" } else { "s" }
                    )
                } else {
                    "pass".into()
                };
                // The layout its snapshots were read with, unless the document's.
                let layout = match r.profile.as_deref() {
                    Some(MIXED_LAYOUTS) => {
                        ", snapshots read with a profile per conversation".into()
                    }
                    Some(p) if p != "document" => format!(", snapshots read with profile {p}"),
                    _ => String::new(),
                };
                out += &format!("\n{}: {head}{layout}\n", r.path);
                if found.is_empty() {
                    out += "No findings.\n";
                    continue;
                }
                let mut t = table::new(term, &["Rule", "Severity", "Count", "Verdict", "Frames"]);
                for l in &found {
                    t.add_row(vec![
                        table::cell(l.rule.id()),
                        table::severity_cell(l.rule.severity(), term),
                        table::cell(l.count.to_string()),
                        table::cell(l.verdict.name()),
                        table::cell(l.frames_text(TEXT_FRAMES)),
                    ]);
                }
                out += &format!("{t}\n");
                if !r.budgets.is_empty() {
                    let mut t = table::new(
                        term,
                        &["Budget", "Conversation", "Measured", "Frames", "What"],
                    );
                    for b in &r.budgets {
                        t.add_row(vec![
                            table::cell(b.key),
                            table::cell(format!("#{} {}", b.conversation, b.client)),
                            table::cell(b.comparison()),
                            table::cell(format!("{}-{}", b.first_frame, b.last_frame)),
                            table::cell(&b.what),
                        ]);
                    }
                    out += &format!("Budgets broken\n{t}\n");
                }
            }
        }
    }
    out += &format!(
        "\n{} file{}: {} passed, {} failed, {} unreadable; exit {code}\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        tally[0],
        tally[1],
        tally[2],
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(fail_on: Severity, allow: &[Rule]) -> Policy {
        let mut allowed = vec![false; Rule::all().len()];
        for r in allow {
            allowed[r.index()] = true;
        }
        Policy {
            fail_on,
            allowed,
            config: None,
        }
    }

    #[test]
    fn verdicts_follow_severity_and_allow_list() {
        let p = policy(Severity::Warning, &[Rule::RtypeEmptyPong]);
        assert_eq!(p.verdict(Rule::RtypeCrc, 1), Verdict::Fail);
        assert_eq!(p.verdict(Rule::RtypeBossTrailer, 1), Verdict::Fail);
        assert_eq!(p.verdict(Rule::RtypeReason, 3), Verdict::Below);
        assert_eq!(p.verdict(Rule::RtypeEmptyPong, 15), Verdict::Allowed);
        assert_eq!(p.verdict(Rule::RtypeCrc, 0), Verdict::Pass);
        let mut counts = RuleCounts::default();
        counts.add(Rule::RtypeEmptyPong, 3);
        let r = FileResult {
            path: "x".into(),
            outcome: Ok(counts.clone()),
            budgets: Vec::new(),
            profile: None,
        };
        assert_eq!(r.exit_code(&p), 0);
        counts.add(Rule::RtypeReason, 4);
        assert_eq!(
            FileResult {
                path: "x".into(),
                outcome: Ok(counts.clone()),
                budgets: Vec::new(),
                profile: None,
            }
            .exit_code(&p),
            0
        );
        assert_eq!(
            FileResult {
                path: "x".into(),
                outcome: Ok(counts),
                budgets: Vec::new(),
                profile: None,
            }
            .exit_code(&policy(Severity::Info, &[])),
            1
        );
        assert_eq!(
            FileResult {
                path: "x".into(),
                outcome: Err("gone".into()),
                budgets: Vec::new(),
                profile: None,
            }
            .exit_code(&p),
            2
        );
    }

    #[test]
    fn frames_are_listed_up_to_the_limit() {
        let mut counts = RuleCounts::default();
        for frame in (1..=30).rev() {
            counts.add(Rule::RtypeCrc, frame);
        }
        let line = lines(&counts, &policy(Severity::Error, &[]))
            .into_iter()
            .find(|l| l.rule == Rule::RtypeCrc)
            .unwrap();
        assert_eq!(line.count, 30);
        assert_eq!(line.frames.len(), MAX_FRAMES);
        assert_eq!(line.frames[0], 11);
        assert_eq!(line.frames_text(3), "11, 12, 13, …");
    }
}
