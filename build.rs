//! Compiles the bundled dialect descriptions (`dialects/*.yaml`) into the static tables of
//! `src/proto/` (`OUT_DIR/<id>.rs`, included there). The description is the one place a
//! bundled message's layout, names, roles, checks and rules are written; compiling it keeps the
//! decoder's tables constant (header views read their ranges at compile time) and costs nothing
//! at run time. The format is docs/dialect-format.md's, with the keys a bundled dialect adds
//! (its "Bundled dialects" section). A mistake in a description fails the build, naming the
//! file, line and column.

#[path = "build/binary.rs"]
mod binary;
#[path = "build/json.rs"]
mod json;
#[path = "build/rules.rs"]
mod rules;
#[path = "src/describe/yaml.rs"]
#[allow(dead_code)]
mod yaml;

use std::path::Path;

use yaml::{Node, Pos};

/// The bundled dialects compiled here.
const DIALECTS: &[&str] = &["rtype", "rt", "rtnp"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-changed=src/describe/yaml.rs");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let mut catalog = String::new();
    for id in DIALECTS {
        let path = format!("dialects/{id}.yaml");
        println!("cargo:rerun-if-changed={path}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let (code, rules) = match compile(&text) {
            Ok(compiled) => compiled,
            Err(e) => panic!("{path}:{}:{}: {}", e.pos.line, e.pos.column, e.message),
        };
        write(&out, &format!("{id}.rs"), &code);
        catalog.push_str(&rules);
    }
    write(
        &out,
        "rules.rs",
        &format!(
            "// Compiled by build.rs from the dialects' descriptions: edit those, not this.\n\
             /// Calls `$then!` with the catalog's entries `$before`, the bundled dialects' rules\n\
             /// (dialects/*.yaml, in order) and `$after`.\n\
             macro_rules! with_dialect_rules {{\n    \
             ($then:ident {{ $($before:tt)* }} {{ $($after:tt)* }}) => {{\n        \
             $then! {{ $($before)*\n{catalog} $($after)* }}\n    }};\n}}\n"
        ),
    );
}

fn write(out: &str, name: &str, code: &str) {
    std::fs::write(Path::new(out).join(name), code).unwrap_or_else(|e| panic!("{out}: {e}"));
}

type Result<T> = std::result::Result<T, yaml::Error>;

/// A description's tables, and its entries of the rule catalog: a dialect of JSON messages has
/// a `payload`, one of binary messages has none (and the message walker's rules).
fn compile(text: &str) -> Result<(String, String)> {
    let root = yaml::parse(text)?;
    let rules = rules::compile(&root)?;
    let mut code = match get(&root, "payload") {
        Some(_) => json::compile(&root)?,
        None => binary::compile(&root)? + &rules.walker(&root)?,
    };
    code.push_str(&rules.datagram_rules());
    Ok((code, rules.catalog))
}

fn err<T>(pos: Pos, message: impl Into<String>) -> Result<T> {
    Err(yaml::Error::at(pos, message))
}

/// A map's value for `key`, if given.
fn get<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    node.entries()?
        .iter()
        .find(|(k, _)| k.text() == Some(key))
        .map(|(_, v)| v)
}

fn map<'a>(node: &'a Node, what: &str, keys: &[&str]) -> Result<&'a [(Node, Node)]> {
    let Some(entries) = node.entries() else {
        return err(
            node.pos,
            format!("{what} must be a map, not {}", node.kind()),
        );
    };
    for (k, _) in entries {
        let key = k.text().unwrap_or_default();
        if !keys.contains(&key) {
            return err(
                k.pos,
                format!(
                    "`{key}` is not a key of {what} (known: {})",
                    keys.join(", ")
                ),
            );
        }
    }
    Ok(entries)
}

fn text<'a>(node: &'a Node, what: &str) -> Result<&'a str> {
    node.text()
        .ok_or_else(|| yaml::Error::at(node.pos, format!("{what} must be a value")))
}

fn required<'a>(node: &'a Node, key: &str, what: &str) -> Result<&'a Node> {
    get(node, key).ok_or_else(|| yaml::Error::at(node.pos, format!("{what} needs `{key}`")))
}

fn integer(node: &Node, what: &str) -> Result<i64> {
    node.integer()
        .ok_or_else(|| yaml::Error::at(node.pos, format!("{what} must be an integer")))
}

fn items<'a>(node: &'a Node, what: &str) -> Result<&'a [Node]> {
    node.items()
        .ok_or_else(|| yaml::Error::at(node.pos, format!("{what} must be a list")))
}

/// The default label: the id's words capitalised (`payload_len` → `Payload Len`).
fn label_of(id: &str) -> String {
    id.split('_').map(capitalised).collect::<Vec<_>>().join(" ")
}

/// A word with its first letter in upper case.
fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A Rust string literal.
fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// A rule named by its ID: resolved against the catalog at compile time.
fn rule(node: &Node) -> Result<String> {
    Ok(format!("Rule::by_id({})", lit(text(node, "a rule ID")?)))
}

/// A message's `direction`.
fn direction(m: &Node) -> Result<&'static str> {
    match text(required(m, "direction", "a message")?, "a direction")? {
        "client-to-server" => Ok("Direction::ClientToServer"),
        "server-to-client" => Ok("Direction::ServerToClient"),
        _ => err(m.pos, "a direction is client-to-server or server-to-client"),
    }
}

/// A message's `role`, as an `Option<MessageRole>` literal: resolved against the vocabulary
/// (`MessageRole::ALL`) at compile time.
fn message_role(m: &Node) -> Result<String> {
    Ok(match get(m, "role") {
        Some(role) => format!("Some(MessageRole::named({}))", lit(text(role, "a role")?)),
        None => "None".into(),
    })
}

/// A `true` or `false` value of `key`, `false` when absent.
fn flag(node: &Node, key: &str) -> Result<bool> {
    match get(node, key).map(|v| (v, v.text())) {
        None => Ok(false),
        Some((_, Some("true"))) => Ok(true),
        Some((_, Some("false"))) => Ok(false),
        Some((v, _)) => err(v.pos, format!("`{key}` is true or false")),
    }
}
