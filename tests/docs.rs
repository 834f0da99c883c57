//! The documentation written from the protocol description stays current: the violation table
//! of docs/violations.md, the examples of the README and docs/reference.md, and docs/protocol.md
//! are what the binary prints now.

use std::process::Command;

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::Schema;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");

fn output(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn violations_doc_lists_the_catalog() {
    let doc = std::fs::read_to_string("docs/violations.md").unwrap();
    let (_, rest) = doc
        .split_once("<!-- catalog:begin -->\n")
        .expect("docs/violations.md has the catalog markers");
    let (table, _) = rest
        .split_once("<!-- catalog:end -->")
        .expect("docs/violations.md has the end marker");
    assert!(
        table == output(&["violations", "--format", "markdown"]),
        "docs/violations.md's table is stale: paste `rtype-inspect violations --format markdown` between its markers"
    );
}

/// The files whose examples are checked.
const EXAMPLES: [&str; 2] = ["README.md", "docs/reference.md"];

/// The examples of the README and docs/reference.md: a ```text block whose first line is
/// `$ rtype-inspect ARGS…` is that command's standard output, whole; after a `<!-- excerpt -->`
/// line, the block's lines are some of the output's, in its order. `RTYPE_BLESS=1` rewrites the
/// whole ones.
#[test]
fn doc_examples_are_the_commands_output() {
    let mut stale = Vec::new();
    let mut examples = 0;
    for file in EXAMPLES {
        let doc = std::fs::read_to_string(file).unwrap();
        let blessed = check_examples(file, &doc, &mut examples, &mut stale);
        if std::env::var_os("RTYPE_BLESS").is_some() && blessed != doc {
            std::fs::write(file, &blessed).unwrap();
        }
    }
    assert!(examples >= 3, "the docs' example markers are gone");
    assert!(
        stale.is_empty(),
        "examples are not what the commands print (RTYPE_BLESS=1 cargo test --test docs rewrites the whole ones):\n{}",
        stale.join("\n")
    );
}

/// Checks `doc`'s examples, counting them and pushing the stale ones; returns `doc` with the
/// whole examples rewritten to what the commands print.
fn check_examples(file: &str, doc: &str, examples: &mut usize, stale: &mut Vec<String>) -> String {
    let mut blessed = String::new();
    let mut lines = doc.split_inclusive('\n').peekable();
    let mut excerpt = false;
    while let Some(line) = lines.next() {
        blessed += line;
        let command = match lines.peek() {
            Some(next) if line == "```text\n" => next.strip_prefix("$ rtype-inspect "),
            _ => None,
        };
        let Some(command) = command else {
            excerpt = line == "<!-- excerpt -->\n";
            continue;
        };
        blessed += lines.next().unwrap();
        let mut shown = String::new();
        for line in lines.by_ref() {
            if line == "```\n" {
                break;
            }
            shown += line;
        }
        let args: Vec<&str> = command.split_whitespace().collect();
        assert!(
            !command.contains(['\'', '"', '|', '>']),
            "{file}: example needs a shell: {command}"
        );
        let out = Command::new(BIN)
            .args(&args)
            .env("NO_COLOR", "1")
            .env_remove("COLUMNS")
            .output()
            .unwrap();
        assert!(out.status.success(), "{file}: $ rtype-inspect {command}");
        let printed = String::from_utf8(out.stdout).unwrap();
        *examples += 1;
        if excerpt {
            let mut output = printed.lines();
            if let Some(missing) = shown.lines().find(|l| !output.any(|o| o == *l)) {
                stale.push(format!(
                    "{file}: $ rtype-inspect {command} (excerpt; edit it by hand): {missing:?} is not in its output, in this order"
                ));
            }
            blessed += &shown;
        } else {
            if printed != shown {
                stale.push(format!("{file}: $ rtype-inspect {command}"));
            }
            blessed += &printed;
        }
        blessed += "```\n";
        excerpt = false;
    }
    blessed
}

#[test]
fn protocol_reference_is_current() {
    let doc = std::fs::read_to_string("docs/protocol.md").unwrap();
    assert!(
        doc == output(&["protocol"]),
        "docs/protocol.md is stale: run `rtype-inspect protocol > docs/protocol.md`"
    );
}

/// The schema of report `T`, as docs/schemas/ holds it: named by its file, each part that several
/// places use defined once (`$defs`; the profile's figures are used three times).
fn generated<T: schemars::JsonSchema>(name: &str) -> String {
    // Doc comments are wrapped at 100 columns; a description is one line.
    let unwrap = RecursiveTransform(|s: &mut Schema| {
        if let Some(serde_json::Value::String(d)) = s.get_mut("description") {
            *d = d.replace('\n', " ");
        }
    });
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(unwrap)
        .into_generator();
    let mut schema = generator.root_schema_for::<T>();
    let id = format!("https://rtype-inspect.invalid/schemas/{name}.schema.json");
    schema.insert("$id".into(), id.into());
    serde_json::to_string_pretty(&schema).unwrap() + "\n"
}

/// The schemas of the reports that are types are generated from them; `RTYPE_BLESS=1` rewrites
/// them. The others are still written by hand.
#[test]
fn report_schemas_are_generated_from_the_report_types() {
    use rtype_inspect::report::*;
    let schemas = [
        ("violations", generated::<catalog::Violations>("violations")),
        ("fields", generated::<field_list::Fields>("fields")),
        ("diff", generated::<diff::Diff>("diff")),
        ("check", generated::<check::Check>("check")),
        ("summary", generated::<summary::SummaryDocument>("summary")),
        ("stats", generated::<stats::StatsDocument>("stats")),
        (
            "profile",
            generated::<profile::document::Profile>("profile"),
        ),
        (
            "proxy",
            generated::<rtype_inspect::proxy::ProxySummary>("proxy"),
        ),
        ("report", generated::<html::ReportData>("report")),
        ("entity", generated::<entity::EntityJson>("entity")),
        ("world", generated::<world::WorldJson>("world")),
        (
            "dialect-check",
            generated::<dialect::CheckJson>("dialect-check"),
        ),
        (
            "dialect-packets",
            generated::<dialect::DatagramJson>("dialect-packets"),
        ),
        (
            "dialect-fields",
            generated::<dialect::FieldsJson>("dialect-fields"),
        ),
    ];
    let mut stale = Vec::new();
    for (name, schema) in schemas {
        let path = format!("docs/schemas/{name}.schema.json");
        if std::fs::read_to_string(&path).unwrap() != schema {
            if std::env::var_os("RTYPE_BLESS").is_some() {
                std::fs::write(&path, schema).unwrap();
            }
            stale.push(path);
        }
    }
    assert!(
        stale.is_empty(),
        "not what the report types generate (RTYPE_BLESS=1 cargo test --test docs rewrites them): {stale:?}"
    );
}

fn validator(name: &str) -> jsonschema::Validator {
    let path = format!("docs/schemas/{name}.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_follows(name: &str, doc: &serde_json::Value) {
    let errors: Vec<String> = validator(name)
        .iter_errors(doc)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}");
}

#[test]
fn violations_json_lists_every_rule_once_and_follows_its_schema() {
    let doc: serde_json::Value =
        serde_json::from_str(&output(&["violations", "--format", "json"])).unwrap();
    assert_eq!(doc["schema"], "violations/1");
    assert_eq!(doc["tool"]["version"], env!("CARGO_PKG_VERSION"));
    assert_follows("violations", &doc);
    let ids: Vec<&str> = doc["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len());
    assert_eq!(ids.len(), rtype_inspect::proto::CATALOG.len());
    assert!(
        ids.contains(&"rtype.crc.mismatch")
            && ids.contains(&"rt.byte-order")
            && ids.contains(&"session.snapshot-rate")
    );
}

#[test]
fn fields_json_of_every_profile_follows_its_schema() {
    let profiles = rtype_inspect::proto::profile::BUNDLED
        .iter()
        .map(|(name, _)| *name);
    for profile in ["document"].into_iter().chain(profiles) {
        let mut args = vec!["fields"];
        if profile != "document" {
            args.extend(["--profile", profile]);
        }
        let doc: serde_json::Value =
            serde_json::from_str(&output(&[&args[..], &["--format", "json"]].concat())).unwrap();
        assert_eq!(doc["schema"], "fields/1", "{profile}");
        assert_eq!(doc["tool"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(doc["profile"], profile);
        assert_follows("fields", &doc);
        // The same fields as the text listing (its P and F lines), in its order.
        let names: Vec<&str> = doc["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let text = output(&args);
        let listed: Vec<&str> = text
            .lines()
            .map(|l| match l.split('\t').collect::<Vec<_>>()[..] {
                ["P", _, name] | ["F", _, name, ..] => name,
                _ => panic!("{l}"),
            })
            .collect();
        assert_eq!(names, listed, "{profile}");
    }
}

#[test]
#[cfg(feature = "parquet")]
fn parquet_doc_lists_the_tables_and_the_example_queries() {
    let doc = std::fs::read_to_string("docs/parquet.md").unwrap();
    let (_, rest) = doc
        .split_once("<!-- tables:begin -->\n")
        .expect("docs/parquet.md has the tables markers");
    let (tables, _) = rest.split_once("<!-- tables:end -->").unwrap();
    assert!(
        tables == output(&["tables"]),
        "docs/parquet.md's tables are stale: paste `rtype-inspect tables` between its markers"
    );
    // Each query shown is examples/duckdb.sql's, word for word (the tests run that file).
    let sql = std::fs::read_to_string("examples/duckdb.sql").unwrap();
    let queries: Vec<&str> = sql.split("-- query: ").skip(1).map(str::trim).collect();
    let shown: Vec<&str> = doc
        .split("```sql\n-- query: ")
        .skip(1)
        .map(|b| b.split_once("```").unwrap().0.trim())
        .collect();
    assert_eq!(
        shown, queries,
        "docs/parquet.md's queries differ from examples/duckdb.sql"
    );
}
