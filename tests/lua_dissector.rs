//! The generated Wireshark Lua dissector: checked in up to date, and run by tshark over every
//! sample, the real captures (with and without their snapshot profiles), one datagram per rule of
//! the catalog and garbage, and compared field by field with `rtype-inspect export` of the same
//! file: the message of every frame, every header and message field, the CRC status, every entity
//! of every snapshot, chunk and reassembled snapshot, LevelInit archetypes and boss trailer, and
//! the expert infos against the datagram's violations, in tshark 4.0, 4.4 and 4.6. A tshark test
//! skips (with a message) a tshark that is missing, and fails in CI (tests/support/skip.rs); CI
//! installs Debian's `tshark` package and builds the chroots of the newer ones.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use rtype_inspect::proto::schema::{Message, Node};
use rtype_inspect::proto::{rt, rtype};
use rtype_inspect::report::lua::{dissector_rules, generate};

#[path = "support/datagrams.rs"]
mod datagrams;
#[path = "support/faults.rs"]
mod faults;
#[path = "support/skip.rs"]
mod skip;
#[path = "support/tshark.rs"]
mod tshark;
use datagrams::{
    chunk, client, compressed, dgram, server, snapshot_body, str8, with_crc, write_pcap, MAGIC,
};
use tshark::{command, tsharks, Tshark};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn dissector() -> PathBuf {
    root().join("wireshark/rtype.lua")
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

fn sample(name: &str) -> PathBuf {
    root().join("samples").join(name)
}

/// A scratch file path unique to this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lua_dissector");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn generated_dissector_is_checked_in() {
    let generated = generate(None);
    let path = dissector();
    if std::env::var_os("RTYPE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "wireshark/rtype.lua is not the generator's output for the document profile; regenerate it with\n    \
         cargo run -- dissector -o wireshark/rtype.lua\n(or: RTYPE_BLESS=1 cargo test --test lua_dissector generated_dissector_is_checked_in)"
    );
}

#[test]
fn generated_lua_uses_only_the_bit_module() {
    let lua = generate(None);
    // The one exception: a chunk compiled with load() only where _VERSION says Lua 5.3 or later.
    let (before, rest) = lua
        .split_once("load([[")
        .expect("the CRC loop for Lua 5.3+");
    let (native, after) = rest.split_once("]])").unwrap();
    assert!(
        before.ends_with("else\n        crc32 = ")
            && before.contains("if _VERSION == \"Lua 5.1\" or _VERSION == \"Lua 5.2\" then"),
        "the Lua 5.3 chunk is loaded on Lua 5.3+ only"
    );
    assert!(native.contains(" ~ "), "the exception is still needed");
    for line in [before, after]
        .iter()
        .flat_map(|part| part.lines())
        .map(|l| l.split("--").next().unwrap_or(""))
    {
        assert!(
            !line.contains("bit32"),
            "bit32 is not in Wireshark 4.4: {line}"
        );
        for op in [" & ", " | ", " // ", " >> ", " << ", " ~ "] {
            assert!(
                !line.contains(op),
                "Lua 5.3 operator `{}` breaks Lua 5.2: {line}",
                op.trim()
            );
        }
    }
}

// ------------------------------------------------------------------------------------------------
// JSON that keeps the order and the duplicates of its keys (tshark's -T json repeats keys)
// ------------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    U(u64),
    I(i64),
    F(f64),
    S(String),
    A(Vec<J>),
    O(Vec<(String, J)>),
}

impl J {
    fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::O(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn str(&self) -> Option<&str> {
        match self {
            J::S(s) => Some(s),
            _ => None,
        }
    }
    fn u64(&self) -> Option<u64> {
        match *self {
            J::U(n) => Some(n),
            J::I(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }
    fn members(&self) -> &[(String, J)] {
        match self {
            J::O(members) => members,
            _ => &[],
        }
    }
}

/// A small JSON reader into [`J`] (serde_json keeps neither the order nor the duplicates of
/// keys, and tshark's indented output is large). With `raw_of`, tshark's `<field>_raw` members
/// (bytes, offset, ...) are kept only for those fields, the others skipped: they are most of `-x`
/// output.
struct Reader<'a> {
    s: &'a [u8],
    i: usize,
    raw_of: Option<&'a std::collections::HashSet<String>>,
}

impl Reader<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.s.get(self.i) {
            self.i += 1;
        }
    }
    fn fail(&self, what: &str) -> ! {
        panic!("invalid JSON at byte {}: {what}", self.i)
    }
    fn eat(&mut self, b: u8) {
        self.ws();
        if self.s.get(self.i) != Some(&b) {
            self.fail(&format!("expected {:?}", b as char));
        }
        self.i += 1;
    }
    fn string(&mut self) -> String {
        self.eat(b'"');
        let start = self.i;
        let Some(end) = self.s[start..]
            .iter()
            .position(|b| *b == b'"' || *b == b'\\')
        else {
            self.fail("string")
        };
        if self.s[start + end] == b'"' {
            self.i = start + end + 1;
            return String::from_utf8(self.s[start..start + end].to_vec()).unwrap();
        }
        // Escapes: let serde_json decode this one string.
        let mut j = start;
        loop {
            match self.s.get(j) {
                Some(b'\\') => j += 2,
                Some(b'"') => break,
                Some(_) => j += 1,
                None => self.fail("string"),
            }
        }
        self.i = j + 1;
        serde_json::from_slice(&self.s[start - 1..=j]).unwrap_or_else(|e| self.fail(&e.to_string()))
    }
    /// Passes over one value without reading it.
    fn skip(&mut self) {
        self.ws();
        let mut depth = 0usize;
        let mut in_string = false;
        while let Some(&b) = self.s.get(self.i) {
            self.i += 1;
            if in_string {
                match b {
                    b'\\' => self.i += 1,
                    b'"' => {
                        in_string = false;
                        if depth == 0 {
                            return;
                        }
                    }
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                b',' if depth == 0 => {
                    self.i -= 1;
                    return;
                }
                _ => {}
            }
        }
    }

    fn value(&mut self) -> J {
        self.ws();
        match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return J::O(members);
                }
                loop {
                    let key = self.string();
                    self.eat(b':');
                    let skip = match (self.raw_of, key.strip_suffix("_raw")) {
                        (Some(keep), Some(field)) => !keep.contains(field),
                        _ => false,
                    };
                    if skip {
                        self.skip();
                    } else {
                        let value = self.value();
                        members.push((key, value));
                    }
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return J::O(members);
                        }
                        _ => self.fail("expected , or }"),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return J::A(items);
                }
                loop {
                    items.push(self.value());
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return J::A(items);
                        }
                        _ => self.fail("expected , or ]"),
                    }
                }
            }
            Some(b'"') => J::S(self.string()),
            Some(_) => {
                let start = self.i;
                while let Some(b) = self.s.get(self.i) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.i += 1;
                }
                let token = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                match token {
                    "null" => J::Null,
                    "true" => J::Bool(true),
                    "false" => J::Bool(false),
                    _ => {
                        if let Ok(n) = token.parse::<u64>() {
                            J::U(n)
                        } else if let Ok(n) = token.parse::<i64>() {
                            J::I(n)
                        } else {
                            J::F(token.parse().unwrap_or_else(|_| self.fail(token)))
                        }
                    }
                }
            }
            None => self.fail("end of input"),
        }
    }
}

fn read_json(text: &str, raw_of: Option<&std::collections::HashSet<String>>) -> J {
    let mut r = Reader {
        s: text.as_bytes(),
        i: 0,
        raw_of,
    };
    let value = r.value();
    r.ws();
    assert_eq!(r.i, r.s.len(), "trailing characters after the JSON");
    value
}

fn parse_json(text: &str) -> J {
    read_json(text, None)
}

// ------------------------------------------------------------------------------------------------
// tshark harness
// ------------------------------------------------------------------------------------------------

/// Runs `ts` with the checked-in dissector over `capture` (plus `args`); fails on any Lua error
/// (a capture cut short is read up to the cut, as rtype-inspect does). Returns stdout.
fn tshark(ts: Tshark, capture: &Path, args: &[&str]) -> String {
    let script = dissector();
    let output = command(ts, capture, &script)
        .args(args)
        .output()
        .expect("tshark runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success() || stderr.contains("cut short in the middle of a packet"),
        "{} failed: {stderr}",
        ts.name()
    );
    // Large JSON output is checked for Lua errors as it is read (see `dissect`): scanning it
    // here costs seconds in a test binary built without optimisations.
    let checked: &[&String] = if args.contains(&"json") {
        &[&stderr]
    } else {
        &[&stdout, &stderr]
    };
    for text in checked {
        assert!(
            !text.contains("Lua Error"),
            "{}: Lua error while dissecting {}:\n{}",
            ts.name(),
            capture.display(),
            lua_lines(text)
        );
        assert!(
            !text.contains("Lua:"),
            "{}: Lua error while loading {}:\n{}",
            ts.name(),
            script.display(),
            lua_lines(text)
        );
        for id in ["rtype.malformed", "rt.malformed", "rtnp.malformed"] {
            assert!(
                !text.contains(id),
                "{}: the dissector failed on {}:\n{}",
                ts.name(),
                capture.display(),
                lua_lines(text)
            );
        }
    }
    stdout
}

fn lua_lines(text: &str) -> String {
    text.lines()
        .filter(|l| l.contains("Lua") || l.contains("malformed"))
        .take(20)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Values computed once per test process, by key.
type Cache<T> = OnceLock<Mutex<HashMap<String, Arc<OnceLock<Arc<T>>>>>>;

/// Memoizes `make` by `key` for the whole test process: tests running in parallel that need the
/// same tshark output wait for the one computing it.
fn cached<T: Send + Sync + 'static>(
    cache: &'static Cache<T>,
    key: String,
    make: impl FnOnce() -> T,
) -> Arc<T> {
    let slot = cache
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(key)
        .or_default()
        .clone();
    slot.get_or_init(|| Arc::new(make())).clone()
}

/// Field types (FT_UINT8, FT_FLOAT, ...) by filter name with snapshot profile `wanted`, read from the dissector's ProtoField constructors (as `tshark -G fields`
/// would list them, without starting tshark; it lists one field of a name that several profiles
/// register). A profile's own fields are marked `-- profile NAME`.
fn field_types(wanted: &str) -> Arc<HashMap<String, String>> {
    static CACHE: Cache<HashMap<String, String>> = OnceLock::new();
    cached(&CACHE, wanted.to_string(), || {
        let lua = std::fs::read_to_string(dissector()).unwrap();
        let mut types = HashMap::new();
        for line in lua.lines() {
            if let Some((_, names)) = line.split_once(" -- profile ") {
                if !names.split(' ').any(|n| n == wanted) {
                    continue;
                }
            }
            for part in line.split("ProtoField.").skip(1) {
                let Some((ctor, rest)) = part.split_once("(\"") else {
                    continue;
                };
                let Some((name, _)) = rest.split_once('"') else {
                    continue;
                };
                let ftype = match ctor {
                    "float" => "FT_FLOAT".to_string(),
                    "double" => "FT_DOUBLE".to_string(),
                    "string" => "FT_STRING".to_string(),
                    "bytes" => "FT_BYTES".to_string(),
                    "bool" => "FT_BOOLEAN".to_string(),
                    "framenum" => "FT_FRAMENUM".to_string(),
                    int => format!("FT_{}", int.to_ascii_uppercase()),
                };
                types.insert(name.to_string(), ftype);
            }
        }
        types
    })
}

/// One field item of tshark's tree: filter name, shown value, raw bytes (hex) when it has any.
#[derive(Clone, Debug)]
struct Item {
    name: String,
    value: String,
    raw: Option<String>,
}

/// What tshark shows of one frame with one of the three protocols.
#[derive(Debug, Default)]
struct Frame {
    /// rtype, rt or rtnp.
    proto: String,
    /// The protocol's fields in tree order, the reassembled snapshot's apart.
    items: Vec<Item>,
    reassembled: Vec<Item>,
    /// Rule IDs of the frame's expert infos (the reassembled snapshot's and the profile
    /// suggestion apart).
    experts: Vec<String>,
    /// Rule IDs of the expert infos of the snapshot the frame completed.
    reassembled_experts: Vec<String>,
    /// The profile the dissector suggested on this frame.
    suggested: Option<String>,
    /// Wireshark's JSON dissector shows the message.
    json: bool,
}

impl Frame {
    fn value(&self, name: &str) -> Option<&str> {
        self.items
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.value.as_str())
    }
}

/// Runs `tshark -T json -x` over `capture` (with snapshot profile `profile`), once per process;
/// frames by number. The document's profile runs in two passes, as Wireshark runs it (what
/// depends on earlier frames is decided in the first and read back in the second); the others,
/// which only differ in snapshot fields, in one, to keep the suite fast.
fn dissect(ts: Tshark, capture: &Path, profile: Option<&str>) -> Arc<BTreeMap<u64, Frame>> {
    static CACHE: Cache<BTreeMap<u64, Frame>> = OnceLock::new();
    let key = format!("{ts:?}|{}|{profile:?}", capture.display());
    cached(&CACHE, key, || {
        let option = profile.map(|p| format!("rtype.profile:{p}"));
        let mut args = vec!["-T", "json", "-x", "-J", "frame rtype rt rtnp json"];
        match &option {
            Some(o) => args.extend(["-o", o.as_str()]),
            None => args.insert(0, "-2"),
        }
        let out = tshark(ts, capture, &args);
        let types = field_types(&layout(capture, profile));
        // The bytes of f32 fields, and of rt's magic, which tells their byte order.
        let floats = types
            .iter()
            .filter(|(n, t)| *t == "FT_FLOAT" || *n == "rt.magic")
            .map(|(n, _)| n.clone())
            .collect();
        let parsed = read_json(&out, Some(&floats));
        drop(out);
        let mut frames = BTreeMap::new();
        let J::A(packets) = parsed else {
            panic!("tshark -T json prints an array")
        };
        for packet in &packets {
            let layers = packet
                .get("_source")
                .and_then(|s| s.get("layers"))
                .expect("layers");
            let number: u64 = layers
                .get("frame")
                .and_then(|f| f.get("frame.number"))
                .and_then(J::str)
                .and_then(|n| n.parse().ok())
                .expect("frame.number");
            for (key, _) in layers.members() {
                assert!(
                    !key.starts_with("Lua Error"),
                    "{}: frame {number}: {key}",
                    capture.display()
                );
            }
            let json = layers.get("json").is_some();
            for (name, layer) in layers.members() {
                if !matches!(name.as_str(), "rtype" | "rt" | "rtnp") {
                    continue;
                }
                let mut frame = Frame {
                    proto: name.clone(),
                    json,
                    ..Frame::default()
                };
                flatten(layer, &mut frame, false, false);
                assert!(
                    frames.insert(number, frame).is_none(),
                    "frame {number} has two of the protocols"
                );
            }
        }
        frames
    })
}

/// Collects the field items of a protocol's tree in order: text items are walked through; a
/// field's own subtree (flag bits, the raw value of a scaled field) only for expert infos and
/// the CRC status.
fn flatten(node: &J, frame: &mut Frame, under_field: bool, reassembled: bool) {
    let mut raw: HashMap<&str, String> = HashMap::new();
    for (key, value) in node.members() {
        assert!(!key.starts_with("Lua Error"), "{key}");
        if key == "_ws.expert" {
            if let Some(message) = value.get("_ws.expert.message").and_then(J::str) {
                let id = message
                    .strip_prefix('[')
                    .and_then(|m| m.split(']').next())
                    .unwrap_or(message);
                assert!(
                    !["rtype.malformed", "rt.malformed", "rtnp.malformed"].contains(&id),
                    "the dissector failed: {message}"
                );
                if id == "rtype.profile.suggested" {
                    let name = message
                        .rsplit('(')
                        .next()
                        .unwrap_or("")
                        .trim_end_matches(')');
                    frame.suggested = Some(name.to_string());
                } else if reassembled {
                    frame.reassembled_experts.push(id.to_string());
                } else {
                    frame.experts.push(id.to_string());
                }
            }
        } else if let Some(field) = key.strip_suffix("_raw") {
            if let J::A(parts) = value {
                if let Some(hex) = parts.first().and_then(J::str) {
                    raw.insert(field, hex.to_string());
                }
            }
        } else if key.ends_with("_tree") {
            flatten(value, frame, true, reassembled);
        } else if let J::O(_) = value {
            // A text item (`_ws.lua.text`, or an expert info's own item, keyed by its text); the
            // reassembled snapshot's holds its length.
            let inside = reassembled || value.get("rtype.reassembled.length").is_some();
            flatten(value, frame, under_field, inside);
        } else if key.starts_with("_ws.") {
            // A text item without children, or Wireshark's own marks (`_ws.malformed` under a
            // malformed-group expert info).
        } else if let J::S(shown) = value {
            if under_field && key != "rtype.crc.status" {
                continue;
            }
            let item = Item {
                name: key.clone(),
                value: shown.clone(),
                raw: raw.remove(key.as_str()),
            };
            if key.starts_with("rtype.reassembled.") && key != "rtype.reassembled.length" {
                frame.reassembled.push(item);
            } else {
                frame.items.push(item);
            }
        } else if let J::A(items) = value {
            // Expert infos or items shown twice in one level (should not happen).
            for v in items {
                flatten(
                    &J::O(vec![(key.clone(), v.clone())]),
                    frame,
                    under_field,
                    reassembled,
                );
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// rtype-inspect's side
// ------------------------------------------------------------------------------------------------

/// The snapshot profile `capture`'s rtype conversations are read with: `profile`, or by default
/// (the preference auto) the layout rtype-inspect found, which its conversation records name.
fn layout(capture: &Path, profile: Option<&str>) -> String {
    if let Some(p) = profile {
        return p.to_string();
    }
    export(capture, None)
        .iter()
        .find_map(|r| {
            (r.get("kind").and_then(J::str) == Some("conversation"))
                .then(|| r.get("layout").and_then(J::str))
                .flatten()
        })
        .unwrap_or("document")
        .to_string()
}

/// `rtype-inspect export` of a capture (with a profile), its records in order.
fn export(capture: &Path, profile: Option<&str>) -> Arc<Vec<J>> {
    static CACHE: Cache<Vec<J>> = OnceLock::new();
    cached(&CACHE, format!("{}|{profile:?}", capture.display()), || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtype-inspect"));
        cmd.arg("export").arg("-q").arg(capture);
        // The profile the dissector's preference names, or by default (auto) each reads with
        // the layout it finds.
        if let Some(name) = profile {
            cmd.arg("--profile").arg(name);
        }
        let out = cmd.output().expect("rtype-inspect runs");
        assert!(
            out.status.success(),
            "rtype-inspect export failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(parse_json)
            .collect()
    })
}

/// Group names (the JSON keys of repeats and switch cases) and their filter segments, from the
/// description of both binary dialects; and the case names, which are objects in the JSON.
struct Groups {
    filter: HashMap<&'static str, &'static str>,
    cases: Vec<&'static str>,
}

fn groups() -> &'static Groups {
    static GROUPS: OnceLock<Groups> = OnceLock::new();
    GROUPS.get_or_init(|| {
        let mut g = Groups {
            filter: HashMap::new(),
            cases: Vec::new(),
        };
        fn walk(nodes: &'static [Node], g: &mut Groups) {
            for node in nodes {
                match node {
                    Node::Repeat { item, .. } => {
                        let old = g.filter.insert(item.name, item.filter);
                        assert!(
                            old.is_none() || old == Some(item.filter),
                            "group {} has two filters",
                            item.name
                        );
                        walk(item.nodes, g);
                    }
                    Node::Switch { cases, .. } => {
                        for case in *cases {
                            let old = g.filter.insert(case.group.name, case.group.filter);
                            assert!(
                                old.is_none() || old == Some(case.group.filter),
                                "case {}",
                                case.group.name
                            );
                            g.cases.push(case.group.name);
                            walk(case.group.nodes, g);
                        }
                    }
                    Node::Field(_) | Node::Masked => {}
                }
            }
        }
        let messages: Vec<&'static Message> = rtype::MESSAGES.iter().chain(rt::MESSAGES).collect();
        for m in messages {
            walk(m.body, &mut g);
            for v in m.variants {
                walk(v.nodes, &mut g);
            }
        }
        g
    })
}

/// An expected field: filter name and the export's value.
#[derive(Debug)]
struct Expected {
    name: String,
    value: J,
}

/// The export's fields under `prefix`, in order, named as the Lua dissector names them: the
/// description's field name after the filter segments of the groups it sits in. Enum names and
/// sprites are the export's annotations, not fields.
fn expected_fields(object: &J, prefix: &str, proto: &str, out: &mut Vec<Expected>) {
    let g = groups();
    let mut previous = "";
    for (key, value) in object.members() {
        let annotation = key.strip_suffix("_name").is_some_and(|k| k == previous);
        if annotation || key == "sprite" {
            continue;
        }
        previous = key;
        if key == "undecoded" {
            let hex = value.get("hex").cloned().unwrap_or(J::Null);
            // The reassembled snapshot's undecoded bytes have a field of their own.
            let name = if prefix.starts_with(REASSEMBLED) {
                format!("{REASSEMBLED}.undecoded")
            } else {
                format!("{proto}.undecoded")
            };
            out.push(Expected {
                name,
                value: J::O(vec![("hex".into(), hex)]),
            });
            continue;
        }
        match value {
            J::A(items) => {
                let segment = g
                    .filter
                    .get(key.as_str())
                    .unwrap_or_else(|| panic!("no group {key} in the description"));
                for item in items {
                    expected_fields(item, &format!("{prefix}.{segment}"), proto, out);
                }
            }
            J::O(_) if g.cases.contains(&key.as_str()) => {
                expected_fields(
                    value,
                    &format!("{prefix}.{}", g.filter[key.as_str()]),
                    proto,
                    out,
                );
            }
            _ => out.push(Expected {
                name: format!("{prefix}.{key}"),
                value: value.clone(),
            }),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// The comparison
// ------------------------------------------------------------------------------------------------

/// Filter prefix of the snapshots reassembled from chunks.
const REASSEMBLED: &str = "rtype.reassembled";

fn parse_int(text: &str) -> Option<i128> {
    match text.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn hex_of(text: &str) -> String {
    text.chars()
        .filter(|c| *c != ':')
        .collect::<String>()
        .to_ascii_lowercase()
}

/// Why tshark's item differs from the export's value, if it does. Floats are compared as f32
/// values (an f32 field by its bytes, as tshark shows 6 digits only).
fn differs(item: &Item, expected: &J, ftype: &str, little_endian: bool) -> Option<String> {
    let shown = item.value.as_str();
    let float_of = |j: &J| -> Option<f64> {
        match j {
            J::U(n) => Some(*n as f64),
            J::I(n) => Some(*n as f64),
            J::F(f) => Some(*f),
            J::S(s) if s == "NaN" => Some(f64::NAN),
            J::S(s) if s == "inf" => Some(f64::INFINITY),
            J::S(s) if s == "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        }
    };
    let same_f32 = |a: f32, b: f32| a == b || (a.is_nan() && b.is_nan());
    let ok = match ftype {
        "FT_FLOAT" => {
            let Some(want) = float_of(expected) else {
                return Some("not a number in the export".into());
            };
            let raw = item
                .raw
                .as_deref()
                .and_then(|h| u32::from_str_radix(h, 16).ok());
            let bits = raw.map(|r| if little_endian { r.swap_bytes() } else { r });
            let got = bits.map(f32::from_bits);
            // tshark shows 6 significant digits: the shown value must be the bytes' value too.
            let shown_close = shown.parse::<f64>().is_ok_and(|s| {
                s == want
                    || (s.is_nan() && want.is_nan())
                    || (s - want).abs() <= 1e-5 * want.abs().max(1e-30)
            });
            shown_close && got.is_some_and(|g| same_f32(g, want as f32))
        }
        "FT_DOUBLE" => {
            let want = float_of(expected);
            let got = shown.parse::<f64>().ok();
            matches!((got, want), (Some(g), Some(w)) if same_f32(g as f32, w as f32))
        }
        t if t.starts_with("FT_UINT") || t.starts_with("FT_INT") => {
            let want = match expected {
                J::U(n) => Some(i128::from(*n)),
                J::I(n) => Some(i128::from(*n)),
                _ => None,
            };
            want.is_some() && parse_int(shown) == want
        }
        "FT_STRING" => match expected {
            J::S(s) => shown == s,
            J::O(_) => expected.get("hex").and_then(J::str).is_some_and(|h| {
                shown
                    .strip_prefix("<not UTF-8: ")
                    .and_then(|s| s.strip_suffix('>'))
                    .map(hex_of)
                    == Some(h.to_ascii_lowercase())
            }),
            _ => false,
        },
        "FT_BYTES" => expected
            .get("hex")
            .and_then(J::str)
            .is_some_and(|h| hex_of(shown) == h.to_ascii_lowercase()),
        other => return Some(format!("unexpected field type {other}")),
    };
    (!ok).then(|| {
        format!(
            "tshark {shown:?} (raw {:?}, {ftype}), export {expected:?}",
            item.raw
        )
    })
}

/// Compares a sequence of tshark items with the expected fields, in order.
fn compare_items(
    items: &[&Item],
    expected: &[Expected],
    types: &HashMap<String, String>,
    le: bool,
    what: &str,
    diffs: &mut Vec<String>,
) {
    for (i, (item, want)) in items.iter().zip(expected).enumerate() {
        if item.name != want.name {
            diffs.push(format!(
                "{what}: field {i} is {} in tshark, {} in the export",
                item.name, want.name
            ));
            return;
        }
        let ftype = types.get(&item.name).map_or("?", String::as_str);
        if let Some(why) = differs(item, &want.value, ftype, le) {
            diffs.push(format!("{what}: {}: {why}", item.name));
        }
    }
    if items.len() != expected.len() {
        let extra: Vec<_> = items
            .iter()
            .skip(expected.len())
            .map(|i| i.name.as_str())
            .take(5)
            .collect();
        let missing: Vec<_> = expected
            .iter()
            .skip(items.len())
            .map(|e| e.name.as_str())
            .take(5)
            .collect();
        diffs.push(format!(
            "{what}: {} fields in tshark, {} in the export (extra {extra:?}, missing {missing:?})",
            items.len(),
            expected.len()
        ));
    }
}

/// Fields of the dissector's runtime (not of the description), compared on their own.
const RUNTIME: &[&str] = &[
    "rtype.header_len",
    "rtype.crc",
    "rtype.crc.status",
    "rtype.payload",
    "rtype.chunk.reassembled_in",
    "rtype.chunk.frame",
    "rtype.reassembled.length",
    "rtnp.framing",
    "rtnp.envelope.segments",
    "rtnp.envelope.words",
    "rtnp.envelope.text",
    "rtnp.keepalive",
    "rtnp.text",
    "rtnp.type",
    "rtype.conversation",
    "rt.conversation",
    "rtnp.conversation",
    // Compared with `packets -T fields` in tests/stalls.rs.
    "rtype.stream.time_delta",
    "rt.stream.time_delta",
    "rtnp.stream.time_delta",
    // Hidden items beside each entity id: compared with `packets -T fields` in
    // entity_id_field_follows_entity_68_as_rtype_inspect_does.
    "rtype.entity.id",
    "rt.entity.id",
];

/// What one comparison saw, for the tests' own assertions.
#[derive(Debug, Default)]
struct Seen {
    /// Datagrams per (direction, message name), as the export names them.
    messages: BTreeMap<(String, String), usize>,
    datagrams: usize,
    fields: usize,
    reassembled: usize,
    /// Findings per rule, as tshark's expert infos count them.
    experts: BTreeMap<String, usize>,
    /// rt datagrams in little-endian.
    little_endian: usize,
    /// Findings per rule in reassembled snapshots.
    reassembled_experts: BTreeMap<String, usize>,
    /// (frame, profile) where the dissector suggested a profile.
    suggested: Vec<(u64, String)>,
    /// Datagrams the capture cut (capture.snaplen).
    cut: usize,
}

/// Compares `ts`'s dissection of `capture` (with snapshot profile `profile`) with
/// `rtype-inspect export` (with the same profile), frame by frame; panics listing the
/// differences.
fn compare(ts: Tshark, capture: &Path, profile: Option<&str>) -> Seen {
    let frames = dissect(ts, capture, profile);
    let records = export(capture, profile);
    let types = field_types(&layout(capture, profile));
    let raised: Vec<&str> = dissector_rules().iter().map(|r| r.id()).collect();
    let mut diffs = Vec::new();
    let mut seen = Seen::default();
    let mut datagram_frames = Vec::new();
    let mut snapshots: HashMap<u64, &J> = HashMap::new();
    // Findings of the capture about a frame (capture.snaplen), by frame.
    let mut loose: HashMap<u64, Vec<String>> = HashMap::new();
    for record in records.iter() {
        match record.get("kind").and_then(J::str) {
            Some("datagram") => datagram_frames.push(record),
            Some("snapshot") => {
                snapshots.insert(record.get("frame").and_then(J::u64).unwrap(), record);
            }
            Some("finding") => {
                let id = record.get("id").and_then(J::str).unwrap();
                if raised.contains(&id) {
                    let frame = record.get("frame").and_then(J::u64).unwrap();
                    loose.entry(frame).or_default().push(id.to_string());
                }
            }
            _ => {}
        }
    }
    for record in &datagram_frames {
        let number = record.get("frame").and_then(J::u64).unwrap();
        let dialect = record.get("dialect").and_then(J::str).unwrap();
        let what = format!(
            "{} ({}): frame {number}",
            capture.file_name().unwrap().to_string_lossy(),
            ts.name()
        );
        let Some(frame) = frames.get(&number) else {
            diffs.push(format!("{what}: no {dialect} in tshark"));
            continue;
        };
        if frame.proto != dialect {
            diffs.push(format!(
                "{what}: {} in tshark, {dialect} in the export",
                frame.proto
            ));
            continue;
        }
        seen.datagrams += 1;
        let name = record.get("name").and_then(J::str).unwrap().to_string();
        let direction = record
            .get("direction")
            .and_then(J::str)
            .unwrap()
            .to_string();
        *seen.messages.entry((direction, name.clone())).or_default() += 1;

        // The expert infos: the datagram's violations of the rules the dissector raises, each as
        // many times as it was broken (the export counts a rule broken again in one violation).
        let mut want: Vec<String> = record
            .get("violations")
            .map(|v| match v {
                J::A(list) => list
                    .iter()
                    .filter_map(|f| {
                        let id = f.get("id").and_then(J::str)?;
                        let count = f.get("count").and_then(J::u64).unwrap_or(1);
                        Some(std::iter::repeat_n(id.to_string(), count as usize))
                    })
                    .flatten()
                    .collect(),
                _ => Vec::new(),
            })
            .unwrap_or_default()
            .into_iter()
            .filter(|id| raised.contains(&id.as_str()))
            .collect();
        let cut = loose
            .get(&number)
            .is_some_and(|l| l.iter().any(|id| id == "capture.snaplen"));
        want.extend(loose.remove(&number).unwrap_or_default());
        want.sort();
        let mut got = frame.experts.clone();
        got.sort();
        if got != want {
            diffs.push(format!("{what}: expert infos {got:?}, violations {want:?}"));
        }
        for id in &got {
            *seen.experts.entry(id.clone()).or_default() += 1;
        }
        for id in &frame.reassembled_experts {
            *seen.reassembled_experts.entry(id.clone()).or_default() += 1;
        }
        if let Some(p) = &frame.suggested {
            seen.suggested.push((number, p.clone()));
        }
        // The conversation, numbered as rtype-inspect numbers it.
        let conversation = record
            .get("conversation")
            .and_then(J::u64)
            .map(|c| c.to_string());
        let field = format!("{dialect}.conversation");
        if frame.value(&field) != conversation.as_deref() {
            diffs.push(format!(
                "{what}: {field} {:?}, export {conversation:?}",
                frame.value(&field)
            ));
        }
        if cut {
            // The capture holds part of the datagram: its fields are not compared (the export
            // reads its last captured bytes as the CRC), its CRC is unverified.
            seen.cut += 1;
            if dialect == "rtype"
                && record.get("header").is_some()
                && frame.value("rtype.crc.status") != Some("2")
            {
                diffs.push(format!(
                    "{what}: a cut datagram's CRC is {:?}, not unverified",
                    frame.value("rtype.crc.status")
                ));
            }
            continue;
        }

        // rt's byte order shows in the magic's bytes (rtype is big-endian).
        let le = frame
            .items
            .iter()
            .any(|i| i.name == "rt.magic" && i.raw.as_deref() == Some("5452"));
        seen.little_endian += usize::from(le);
        let items: Vec<&Item> = frame
            .items
            .iter()
            .filter(|i| !RUNTIME.contains(&i.name.as_str()))
            .collect();
        let mut expected = Vec::new();
        match dialect {
            "rtype" | "rt" => {
                let header = record.get("header");
                if let Some(header) = header {
                    expected_fields(header, dialect, dialect, &mut expected);
                }
                let short = record.get("code").and_then(J::u64).and_then(|code| {
                    let code = u8::try_from(code).ok()?;
                    if dialect == "rtype" {
                        rtype::message(code)
                    } else {
                        rt::message(code)
                    }
                    .map(|m| m.short)
                });
                if let Some(fields) = record.get("fields") {
                    let prefix = format!("{dialect}.{}", short.unwrap_or("?"));
                    expected_fields(fields, &prefix, dialect, &mut expected);
                }
                // Without a header (a short datagram), rtype-inspect shows no field; the dissector
                // shows the header fields there are bytes for (`<dialect>.<name>`), and nothing else.
                let items: Vec<&Item> = if header.is_none() {
                    items
                        .into_iter()
                        .filter(|i| i.name.matches('.').count() > 1)
                        .collect()
                } else {
                    items
                };
                seen.fields += expected.len();
                compare_items(&items, &expected, &types, le, &what, &mut diffs);
            }
            _ => {
                // rtnp: the framing, the message type, the text when it is not JSON.
                let framing = record
                    .get("header")
                    .and_then(|h| h.get("framing"))
                    .and_then(J::str);
                if frame.value("rtnp.framing") != framing {
                    diffs.push(format!(
                        "{what}: framing {:?}, export {framing:?}",
                        frame.value("rtnp.framing")
                    ));
                }
                let shown = frame
                    .value("rtnp.type")
                    .or(frame.value("rtnp.keepalive"))
                    .unwrap_or("UNKNOWN");
                if shown != name {
                    diffs.push(format!("{what}: message {shown:?}, export {name:?}"));
                }
                // The export's fields are the JSON message, or {"text": ...} when the text is not JSON.
                let not_json = [
                    "rtnp.keepalive.not-json",
                    "rtnp.json.invalid",
                    "rtnp.json.limit",
                ];
                let violations = record
                    .get("violations")
                    .map(|v| format!("{v:?}"))
                    .unwrap_or_default();
                let fields = record.get("fields");
                let text = fields
                    .filter(|_| {
                        not_json
                            .iter()
                            .any(|id| violations.contains(&format!("S(\"{id}\")")))
                    })
                    .and_then(|f| f.get("text"))
                    .and_then(J::str);
                let json_type = fields
                    .filter(|_| text.is_none())
                    .and_then(|f| f.get("type"))
                    .and_then(J::str);
                if frame.value("rtnp.text") != text || frame.value("rtnp.type") != json_type {
                    diffs.push(format!(
                        "{what}: text {:?} type {:?}, export {text:?} {json_type:?}",
                        frame.value("rtnp.text"),
                        frame.value("rtnp.type")
                    ));
                }
                seen.fields += 3;
            }
        }
        if dialect == "rtype" {
            if let (Some(header_len), Some(crc)) =
                (record.get("header_len").and_then(J::u64), record.get("crc"))
            {
                let runtime = [
                    ("rtype.header_len", header_len.to_string()),
                    (
                        "rtype.crc",
                        format!("0x{:08x}", crc.get("stored").and_then(J::u64).unwrap()),
                    ),
                    (
                        "rtype.crc.status",
                        if crc.get("ok") == Some(&J::Bool(true)) {
                            "1"
                        } else {
                            "0"
                        }
                        .to_string(),
                    ),
                ];
                for (field, want) in runtime {
                    if frame.value(field) != Some(want.as_str()) {
                        diffs.push(format!(
                            "{what}: {field} {:?}, export {want}",
                            frame.value(field)
                        ));
                    }
                }
            }
            // The snapshot a chunk completed.
            match (snapshots.get(&number), frame.reassembled.is_empty()) {
                (Some(snapshot), false) => {
                    let mut expected = Vec::new();
                    expected_fields(
                        snapshot.get("fields").unwrap(),
                        REASSEMBLED,
                        "rtype",
                        &mut expected,
                    );
                    let items: Vec<&Item> = frame.reassembled.iter().collect();
                    seen.fields += expected.len();
                    seen.reassembled += 1;
                    compare_items(
                        &items,
                        &expected,
                        &types,
                        false,
                        &format!("{what} (reassembled)"),
                        &mut diffs,
                    );
                }
                (None, true) => {}
                (Some(_), true) => diffs.push(format!("{what}: no reassembled snapshot in tshark")),
                (None, false) => diffs.push(format!(
                    "{what}: a reassembled snapshot rtype-inspect does not have"
                )),
            }
        }
    }
    let exported: std::collections::HashSet<u64> = datagram_frames
        .iter()
        .map(|r| r.get("frame").and_then(J::u64).unwrap())
        .collect();
    for number in frames.keys().filter(|n| !exported.contains(n)) {
        diffs.push(format!(
            "frame {number}: {} in tshark, not in the export",
            frames[number].proto
        ));
    }
    assert!(
        diffs.is_empty(),
        "{} ({}, profile {profile:?}): {} differences:\n{}",
        capture.display(),
        ts.name(),
        diffs.len(),
        diffs[..diffs.len().min(30)].join("\n")
    );
    assert!(
        seen.datagrams > 0,
        "{}: nothing compared",
        capture.display()
    );
    seen
}

/// Findings per rule as `tshark -z expert` counts them.
fn expert_counts(ts: Tshark, capture: &Path) -> BTreeMap<String, usize> {
    let out = tshark(ts, capture, &["-q", "-z", "expert"]);
    let mut counts = BTreeMap::new();
    for line in out.lines() {
        let Some(open) = line.find('[') else { continue };
        let Some(close) = line[open..].find(']') else {
            continue;
        };
        let Some(n) = line
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        *counts
            .entry(line[open + 1..open + close].to_string())
            .or_default() += n;
    }
    counts
}

/// Findings per rule as `rtype-inspect check --format json` counts them, for the rules the
/// dissector raises.
fn check_counts(capture: &Path) -> BTreeMap<String, usize> {
    let out = Command::new(env!("CARGO_BIN_EXE_rtype-inspect"))
        .args(["check", "--format", "json", "--fail-on", "info"])
        .arg(capture)
        .output()
        .expect("rtype-inspect runs");
    let report = parse_json(&String::from_utf8_lossy(&out.stdout));
    let raised: Vec<&str> = dissector_rules().iter().map(|r| r.id()).collect();
    let mut counts = BTreeMap::new();
    let files = report.get("files").cloned().unwrap_or(J::Null);
    for file in match &files {
        J::A(f) => f.as_slice(),
        _ => &[],
    } {
        for finding in match file.get("findings") {
            Some(J::A(f)) => f.as_slice(),
            _ => &[],
        } {
            let id = finding.get("id").and_then(J::str).unwrap();
            if raised.contains(&id) {
                counts.insert(
                    id.to_string(),
                    finding.get("count").and_then(J::u64).unwrap() as usize,
                );
            }
        }
    }
    counts
}

/// Message counts by (direction, name), as `../shared/captures/README.md` lists them.
fn counts(list: &[(&str, &str, usize)]) -> BTreeMap<(String, String), usize> {
    list.iter()
        .map(|(d, n, c)| ((d.to_string(), n.to_string()), *c))
        .collect()
}

const C2S: &str = "client_to_server";
const S2C: &str = "server_to_client";

// ------------------------------------------------------------------------------------------------
// Field-by-field comparison with rtype-inspect export
// ------------------------------------------------------------------------------------------------

#[test]
fn tshark_agrees_with_export_on_the_rtype_samples() {
    for ts in tsharks("tshark_agrees_with_export_on_the_rtype_samples") {
        let mut total = 0;
        for name in [
            "clean-session.pcap",
            "clean-session.pcap.gz",
            "violations-crc.pcap",
            "violations-compression.pcap",
            "violations-messages.pcap",
            "violations-snapshot.pcap",
            "violations-chunks.pcap",
            "old-header.pcap",
            "truncated.pcap",
            "link-variety.pcapng",
        ] {
            let seen = compare(ts, &sample(name), None);
            total += seen.datagrams;
            if name.starts_with("clean")
                || name == "link-variety.pcapng"
                || name == "truncated.pcap"
            {
                assert!(seen.experts.is_empty(), "{name}: {:?}", seen.experts);
            }
            if name == "clean-session.pcap" {
                assert!(seen.reassembled > 0, "{name}: chunk sets reassembled");
                assert!(
                    seen.messages.len() >= 27,
                    "{name}: every message type but 0x31: {:?}",
                    seen.messages
                );
            }
            if name == "old-header.pcap" {
                assert_eq!(
                    seen.experts.get("rtype.header.15-byte"),
                    Some(&2),
                    "once per conversation"
                );
            }
        }
        assert!(total > 1400, "{total} datagrams compared");
    }
}

#[test]
fn tshark_expert_counts_match_check() {
    for ts in tsharks("tshark_expert_counts_match_check") {
        // The field-by-field tests compare every frame's expert infos with its violations; these
        // count them the way a user would, with tshark's own statistics.
        for name in [
            "violations-messages.pcap",
            "violations-chunks.pcap",
            "old-header.pcap",
            "rt-big-endian.pcap",
            "rtnp-envelope.pcap",
        ] {
            let capture = sample(name);
            let tshark = expert_counts(ts, &capture);
            let check = check_counts(&capture);
            assert_eq!(
                tshark,
                check,
                "{name}: {} -z expert, then check --format json",
                ts.name()
            );
            assert!(!check.is_empty(), "{name}");
        }
    }
}

#[test]
fn tshark_agrees_with_export_on_the_17_byte_capture() {
    let capture = fixture("reference-17byte-1client.pcap");
    let expected = counts(&[
        (C2S, "CLIENT_HELLO", 1),
        (C2S, "CLIENT_JOIN_REQUEST", 1),
        (C2S, "CLIENT_READY", 1),
        (C2S, "CLIENT_PING", 15),
        (C2S, "CLIENT_INPUT", 900),
        (C2S, "CLIENT_ACKNOWLEDGE", 1),
        (C2S, "CLIENT_DISCONNECT", 1),
        (S2C, "SERVER_HELLO", 1),
        (S2C, "SERVER_JOIN_ACCEPT", 1),
        (S2C, "SERVER_PONG", 15),
        (S2C, "SERVER_SNAPSHOT", 874),
        (S2C, "SERVER_GAME_START", 1),
        (S2C, "SERVER_ENTITY_SPAWN", 557),
        (S2C, "SERVER_ENTITY_DESTROYED", 806),
        (S2C, "SERVER_SNAPSHOT_CHUNK", 26),
        (S2C, "SERVER_LEVEL_INIT", 1),
    ]);
    for ts in tsharks("tshark_agrees_with_export_on_the_17_byte_capture") {
        // The document's table misreads this build's snapshots; its profile reads them all,
        // found per conversation by default (auto) or chosen by the preference, with the same
        // installed dissector.
        for profile in [None, Some("reference-17byte"), Some("document")] {
            let seen = compare(ts, &capture, profile);
            assert_eq!(seen.messages, expected, "profile {profile:?}");
            assert_eq!(seen.reassembled, 16, "complete chunk sets");
            assert!(!seen.experts.contains_key("rtype.crc.mismatch"));
            let departures = seen.experts.get("rtype.snapshot.layout").copied();
            assert_eq!(departures, profile.is_none().then_some(1), "{profile:?}");
            if profile != Some("document") {
                for id in [
                    "rtype.message.truncated",
                    "rtype.message.trailing",
                    "rtype.snapshot.undefined-bit",
                    "rtype.snapshot.reserved-bit",
                ] {
                    assert!(
                        !seen.experts.contains_key(id),
                        "{id} with the capture's profile: {:?}",
                        seen.experts
                    );
                }
                assert!(
                    seen.reassembled_experts.is_empty(),
                    "{:?}",
                    seen.reassembled_experts
                );
                assert!(seen.suggested.is_empty(), "{:?}", seen.suggested);
            } else {
                // The first snapshot that stops decoding suggests the build's profile, once for
                // the conversation.
                assert_eq!(seen.suggested.len(), 1, "{:?}", seen.suggested);
                assert_eq!(seen.suggested[0].1, "reference-17byte");
            }
            assert!(seen.experts.contains_key("rtype.pong.empty"));
            assert!(seen.experts.contains_key("rtype.levelinit.boss-trailer"));
        }
        // The chunks that did not complete their set link to the frame that did.
        let frames = dissect(ts, &capture, None);
        let linked: Vec<_> = frames
            .values()
            .filter_map(|f| f.value("rtype.chunk.reassembled_in"))
            .collect();
        assert_eq!(linked.len(), 26 - 16);
        for target in linked {
            let completing = &frames[&target.parse::<u64>().unwrap()];
            assert_eq!(completing.value("rtype.msg_type"), Some("0x21"));
            assert!(!completing.reassembled.is_empty());
        }
        // A reassembled snapshot that stops decoding says why, as a datagram would (frame 558:
        // entity 0, then 1,041 bytes the document's table cannot read).
        assert_eq!(
            dissect(ts, &capture, Some("document"))[&558].reassembled_experts,
            ["rtype.snapshot.undefined-bit"]
        );
        let level_init = frames
            .values()
            .find(|f| f.value("rtype.levelinit.archetype_count").is_some())
            .unwrap();
        assert_eq!(
            level_init.value("rtype.levelinit.archetype_count"),
            Some("17")
        );
        assert_eq!(
            level_init.value("rtype.levelinit.archetype.sprite_id"),
            Some("player_ship")
        );
        assert_eq!(
            level_init.value("rtype.levelinit.boss.name"),
            Some("boss_alpha")
        );
    }
}

#[test]
fn auto_reads_each_conversation_from_its_first_snapshot_the_document_misreads() {
    let capture = scratch("late-departure.pcap");
    datagrams::write_pcap(&capture, &datagrams::late_departure());
    for ts in tsharks("auto_reads_each_conversation_from_its_first_snapshot_the_document_misreads")
    {
        // The dissector by default (auto) and rtype-inspect without a profile agree field by
        // field and finding by finding.
        let seen = compare(ts, &capture, None);
        assert_eq!(seen.experts.get("rtype.snapshot.layout"), Some(&1));
        assert!(!seen.experts.contains_key("rtype.snapshot.undefined-bit"));
        let frames = dissect(ts, &capture, None);
        let departing: Vec<u64> = frames
            .iter()
            .filter(|(_, f)| f.experts.iter().any(|e| e == "rtype.snapshot.layout"))
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(departing, [4], "{}", ts.name());
        assert_eq!(
            frames[&6].value("rtype.snapshot.entity.pos_x"),
            Some("100.2")
        );
        // The document's table, chosen, misreads both entities.
        let seen = compare(ts, &capture, Some("document"));
        assert_eq!(seen.experts.get("rtype.snapshot.undefined-bit"), Some(&2));
    }
}

#[test]
fn tshark_agrees_with_export_on_the_15_byte_capture() {
    let capture = fixture("reference-15byte-levelevents.pcap");
    let expected = counts(&[
        (C2S, "CLIENT_HELLO", 1),
        (C2S, "CLIENT_JOIN_REQUEST", 1),
        (C2S, "CLIENT_READY", 1),
        (C2S, "CLIENT_PING", 20),
        (C2S, "CLIENT_INPUT", 1200),
        (C2S, "CLIENT_ACKNOWLEDGE", 1),
        (C2S, "CLIENT_DISCONNECT", 1),
        (S2C, "SERVER_HELLO", 1),
        (S2C, "SERVER_JOIN_ACCEPT", 1),
        (S2C, "SERVER_PONG", 20),
        (S2C, "SERVER_SNAPSHOT", 1201),
        (S2C, "SERVER_GAME_START", 1),
        (S2C, "SERVER_ENTITY_SPAWN", 408),
        (S2C, "SERVER_ENTITY_DESTROYED", 627),
        (S2C, "SERVER_LEVEL_INIT", 1),
        (S2C, "SERVER_LEVEL_EVENT", 4),
    ]);
    for ts in tsharks("tshark_agrees_with_export_on_the_15_byte_capture") {
        for profile in [None, Some("reference-15byte"), Some("document")] {
            let seen = compare(ts, &capture, profile);
            let departures = seen.experts.get("rtype.snapshot.layout").copied();
            assert_eq!(departures, profile.is_none().then_some(1), "{profile:?}");
            assert_eq!(seen.messages, expected, "profile {profile:?}");
            // The older header, reported once for the capture's one conversation.
            assert_eq!(
                seen.experts.get("rtype.header.15-byte"),
                Some(&1),
                "{:?}",
                seen.experts
            );
            assert!(!seen.experts.contains_key("rtype.crc.mismatch"));
            assert_eq!(seen.reassembled, 0);
            if profile != Some("document") {
                for id in [
                    "rtype.message.truncated",
                    "rtype.message.trailing",
                    "rtype.snapshot.undefined-bit",
                ] {
                    assert!(
                        !seen.experts.contains_key(id),
                        "{id} with the capture's profile: {:?}",
                        seen.experts
                    );
                }
                assert!(seen.suggested.is_empty(), "{:?}", seen.suggested);
            } else {
                assert!(
                    seen.experts.contains_key("rtype.snapshot.undefined-bit"),
                    "bit 10 (score) is not the document's"
                );
                let suggested: Vec<&str> = seen.suggested.iter().map(|s| s.1.as_str()).collect();
                assert_eq!(suggested, ["reference-15byte"]);
            }
        }
        let frames = dissect(ts, &capture, None);
        assert!(
            frames
                .values()
                .all(|f| f.value("rtype.header_len") == Some("15")),
            "the older header is recognised"
        );
        // Its version byte has no compression bit.
        assert!(frames
            .values()
            .all(|f| f.value("rtype.compressed").is_none()));
    }
}

#[test]
fn tshark_agrees_with_export_on_rt() {
    let expected = counts(&[
        (C2S, "CLIENT_CONNECT", 2),
        (C2S, "PLAYER_IS_READY", 2),
        (C2S, "PLAYER_INPUT", 661),
        (C2S, "CLIENT_DISCONNECT", 2),
        (S2C, "SERVER_ACCEPT", 2),
        (S2C, "ENTITY_SPAWN", 16),
        (S2C, "LEVEL_START", 2),
        (S2C, "PLAYER_INPUT", 632),
        (S2C, "TRANSFORM_SNAPSHOT", 817),
        (S2C, "HEALTH_SNAPSHOT", 1342),
        (S2C, "WEAPON_SNAPSHOT", 1342),
        (S2C, "WEAPON_FIRE", 161),
    ]);
    for ts in tsharks("tshark_agrees_with_export_on_rt") {
        let seen = compare(ts, &fixture("rt-two-players.pcap"), None);
        assert_eq!(seen.messages, expected);
        assert_eq!(
            seen.experts.get("rt.byte-order"),
            Some(&2),
            "once per conversation: {:?}",
            seen.experts
        );
        assert_eq!(seen.little_endian, 4981);
        for name in ["rt-big-endian.pcap", "rt-little-endian.pcap"] {
            let seen = compare(ts, &sample(name), None);
            assert!(!seen.experts.is_empty(), "{name}");
        }
    }
}

#[test]
fn tshark_agrees_with_export_on_rtnp() {
    let expected = counts(&[
        (C2S, "PING", 5),
        (C2S, "request_lobby", 1),
        (C2S, "viewport", 1),
        (C2S, "start_game", 1),
        (C2S, "player_input", 449),
        (C2S, "chat_message", 1),
        (C2S, "leave_lobby", 1),
        (S2C, "PONG", 5),
        (S2C, "assign_id", 1),
        (S2C, "lobby_joined", 1),
        (S2C, "lobby_state", 1),
        (S2C, "game_started", 1),
        (S2C, "snapshot", 321),
        (S2C, "lobby_left", 1),
    ]);
    for ts in tsharks("tshark_agrees_with_export_on_rtnp") {
        let seen = compare(ts, &fixture("rtnp-solo.pcap"), None);
        assert_eq!(seen.messages, expected);
        assert_eq!(seen.experts.get("rtnp.keepalive.not-json"), Some(&10));
        for name in [
            "rtnp-envelope.pcap",
            "rtnp-fragmented.pcap",
            "rtnp-raw-json.pcap",
        ] {
            compare(ts, &sample(name), None);
        }
        // The JSON goes to Wireshark's own dissector; the envelope's Text is a string.
        let frames = dissect(ts, &fixture("rtnp-solo.pcap"), None);
        assert_eq!(
            frames.values().filter(|f| f.json).count(),
            790 - 10,
            "every message but the keep-alives is JSON"
        );
        assert!(frames
            .values()
            .all(|f| f.json == f.value("rtnp.type").is_some()));
        let envelope = dissect(ts, &sample("rtnp-envelope.pcap"), None);
        let text = envelope
            .values()
            .find_map(|f| f.value("rtnp.envelope.text"))
            .expect("an envelope's Text");
        assert!(
            text.starts_with('{') || text == "PING" || text == "PONG",
            "{text}"
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Synthetic captures: one datagram per rule, and garbage
// ------------------------------------------------------------------------------------------------

/// One datagram per per-datagram rule, with the rule it must raise.
fn rule_datagrams() -> Vec<(&'static str, Vec<u8>)> {
    let f = |x: f32| x.to_be_bytes();
    let input = |flags: u16, x: f32| {
        let mut p = 1u32.to_be_bytes().to_vec();
        p.extend(flags.to_be_bytes());
        p.extend(f(x));
        p.extend(f(0.0));
        p.extend(f(0.0));
        client(0x05, &p)
    };
    let old15 = {
        let mut d = MAGIC.to_vec();
        d.extend([1, 1, 0x01, 0, 1, 0, 0, 0, 0, 0, 0]);
        with_crc(d)
    };
    let plain: Vec<u8> = snapshot_body(&[(1, 0x0001, &[3u8][..]); 30]);
    let incompressible: Vec<u8> = (0..100u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let bad_crc = {
        let mut d = client(0x01, &[]);
        *d.last_mut().unwrap() ^= 0xFF;
        d
    };
    let bad_len = {
        let mut d = MAGIC.to_vec();
        d.extend([1, 1, 0x04, 0, 1, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 1]);
        with_crc(d)
    };
    let mut level_init = vec![0, 1, 0, 0, 0, 42];
    level_init.extend(str8(b"bg"));
    level_init.extend(str8(b"music"));
    level_init.push(0); // no archetypes
    level_init.push(1); // one boss
    level_init.extend(20u16.to_be_bytes());
    level_init.extend(str8(b"boss"));
    level_init.extend(f(2.5));
    level_init.extend(f(2.5));
    let mut scroll = vec![1, 2];
    scroll.extend(f(1.0));
    scroll.push(2);
    for t in [2.0f32, 1.0] {
        scroll.extend(f(t));
        scroll.extend(f(0.5));
    }
    let mut gate = vec![5];
    gate.extend(str8(b"gate-1"));
    gate.extend([0xEE, 0xEE]);
    vec![
        ("rtype.datagram.short", vec![0xA3, 0x5F, 0xC8, 0x1D, 1, 1]),
        ("rtype.header.15-byte", old15),
        ("rtype.header.version", dgram(2, 1, 0x01, 0, &[], 0)),
        ("rtype.header.packet-type", dgram(1, 3, 0x01, 0, &[], 0)),
        ("rtype.header.payload-len", bad_len),
        ("rtype.crc.mismatch", bad_crc),
        (
            "rtype.compress.small",
            compressed(0x14, &snapshot_body(&[(1, 1, &[3]), (2, 1, &[3])]), 16),
        ),
        (
            "rtype.compress.not-smaller",
            dgram(
                0x81,
                2,
                0x19,
                0,
                &lz4_flex::block::compress(&incompressible),
                100,
            ),
        ),
        ("rtype.compress.orig-size-set", dgram(1, 1, 0x01, 0, &[], 5)),
        (
            "rtype.compress.lz4",
            dgram(0x81, 2, 0x14, 0, &[0xF0, 1, 2, 3], 200),
        ),
        (
            "rtype.compress.orig-size",
            compressed(0x14, &plain, plain.len() as u16 - 1),
        ),
        ("rtype.message.unknown-type", server(0x99, &[1, 2, 3])),
        (
            "rtype.message.direction",
            dgram(1, 2, 0x04, 0, &[0, 0, 0, 1], 0),
        ),
        (
            "rtype.message.truncated",
            server(0x14, &snapshot_body(&[(1, 0x0001, &[][..]); 2])),
        ),
        ("rtype.message.trailing", server(0x32, &gate)),
        ("rtype.message.size", client(0x04, &[0, 0, 1])),
        ("rtype.pong.empty", server(0x13, &[])),
        ("rtype.levelinit.boss-trailer", server(0x30, &level_init)),
        (
            "rtype.string.utf8",
            server(0x19, &str8(&[0x66, 0xFF, 0xC0, 0x80])),
        ),
        (
            "rtype.snapshot.reserved-bit",
            server(0x14, &snapshot_body(&[(9, 0x0081, &[3, 1, 2, 3, 4])])),
        ),
        (
            "rtype.snapshot.undefined-bit",
            server(0x14, &snapshot_body(&[(9, 0x1000, &[1, 2, 3, 4])])),
        ),
        ("rtype.input.non-finite", input(0x0001, f32::NAN)),
        ("rtype.input.unused-bits", input(0x8001, 1.0)),
        ("rtype.reason.unknown", server(0x17, &[0x77])),
        ("rtype.levelevent.unknown-type", server(0x32, &[9, 1, 2, 3])),
        ("rtype.levelevent.unsorted-keyframes", server(0x32, &scroll)),
        ("rtype.leveltransition.sent", server(0x31, &[])),
        ("rtype.chunk.total-zero", chunk(50, 0, 0, &[])),
        ("rtype.chunk.index-out-of-range", chunk(51, 2, 5, &[])),
        ("rtype.chunk.duplicate", chunk(52, 3, 0, &[(1, 1, &[3])])),
        ("rtype.chunk.duplicate", chunk(52, 3, 0, &[(1, 1, &[3])])),
        (
            "rtype.chunk.total-mismatch",
            chunk(53, 2, 0, &[(1, 1, &[3])]),
        ),
        (
            "rtype.chunk.total-mismatch",
            chunk(53, 3, 1, &[(2, 1, &[3])]),
        ),
    ]
}

#[test]
fn tshark_raises_every_datagram_rule() {
    let datagrams = rule_datagrams();
    // Their conversation is recognised first (a short datagram proves nothing by itself).
    let mut packets = openers();
    packets.extend(datagrams.iter().map(|(_, d)| (40000, 40001, d.clone())));
    // A chunk set completed over two datagrams, out of order.
    packets.push((
        40000,
        40001,
        chunk(60, 2, 1, &[(2, 0x0003, &[3, 0x42, 0, 0, 0])]),
    ));
    packets.push((40000, 40001, chunk(60, 2, 0, &[(1, 0x0001, &[4])])));
    let path = scratch("rules.pcap");
    write_pcap(&path, &packets);
    for ts in tsharks("tshark_raises_every_datagram_rule") {
        let out = tshark(ts, &path, &["-V", "-P", "-z", "expert"]);
        for (id, _) in &datagrams {
            assert!(
                out.contains(&format!("[{id}] ")),
                "{}: no expert info [{id}]",
                ts.name()
            );
        }
        let infos = out.lines().filter(|l| l.contains("[Expert Info")).count();
        assert!(infos >= datagrams.len());
        assert!(
            out.contains("Reassembled snapshot (2 entities from 2 chunks)"),
            "{out}"
        );
        assert!(
            out.contains("SERVER_SNAPSHOT_CHUNK seq=7 tick=60 chunk 1/2 [reassembled]"),
            "{out}"
        );
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Random datagrams starting with the magic: truncated headers, huge lengths, random payloads
/// behind consistent headers, bad LZ4, the older header, chunk sets; on the server port or not.
fn garbage_datagrams(seed: u64, count: usize) -> Vec<(u16, u16, Vec<u8>)> {
    const CODES: &[u8] = &[
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
        0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x30, 0x31, 0x32, 0x00, 0xFF,
    ];
    let mut rng = Rng(seed);
    let mut packets = Vec::new();
    for i in 0..count {
        let code = CODES[rng.below(CODES.len())];
        let ptype = [1u8, 2, 0, 7][rng.below(4)];
        let len = rng.below(90);
        let datagram = match i % 8 {
            // The magic and random bytes: truncated headers, wrong lengths.
            0 => {
                let mut d = MAGIC.to_vec();
                let n = rng.below(40);
                d.extend(rng.bytes(n));
                d
            }
            // A header announcing a huge payload.
            1 => {
                let mut d = MAGIC.to_vec();
                d.extend([
                    rng.next() as u8,
                    ptype,
                    code,
                    0,
                    1,
                    0,
                    0,
                    0,
                    1,
                    0xFF,
                    0xFF,
                    0xFF,
                    0xFF,
                ]);
                d.extend(rng.bytes(len));
                d
            }
            // Random payloads behind a consistent header and CRC: the message walker's turn.
            2 | 3 => dgram(1, ptype, code, rng.next() as u32, &rng.bytes(len), 0),
            // Garbage LZ4 with a consistent header and CRC.
            4 => dgram(0x81, ptype, code, 0, &rng.bytes(len), rng.next() as u16),
            // Valid LZ4 with one byte corrupted.
            5 => {
                let plain = {
                    let mut p = rng.bytes(len);
                    p.extend(vec![rng.next() as u8; 80]);
                    p
                };
                let mut packed = lz4_flex::block::compress(&plain);
                let at = rng.below(packed.len());
                packed[at] = rng.next() as u8;
                dgram(0x81, 2, code, 0, &packed, plain.len() as u16)
            }
            // The older 15-byte header, random payload, correct CRC.
            6 => {
                let payload = rng.bytes(len);
                let mut d = MAGIC.to_vec();
                d.extend([1, ptype, code, 0, 2, 0, 0, 0, 3]);
                d.extend((payload.len() as u16).to_be_bytes());
                d.extend(payload);
                with_crc(d)
            }
            // Snapshot chunks with random totals and indexes, from few ticks.
            _ => {
                let mut p = (rng.below(4) as u16).to_be_bytes().to_vec();
                p.extend((rng.below(4) as u16).to_be_bytes());
                p.extend(rng.bytes(len));
                dgram(1, 2, 0x21, rng.below(3) as u32, &p, 0)
            }
        };
        let (sport, dport) = if i % 3 == 0 {
            (50010, 41000)
        } else {
            (41000 + (i % 5) as u16, 42000)
        };
        packets.push((sport, dport, datagram));
    }
    packets
}

#[test]
fn tshark_survives_garbage() {
    let mut packets = garbage_datagrams(0x5EED_1234_ABCD_0001, 400);
    // An LZ4 bomb (more than 65535 bytes once decompressed) and a large valid payload.
    packets.push((
        41000,
        42000,
        dgram(
            0x81,
            2,
            0x14,
            0,
            &lz4_flex::block::compress(&vec![0u8; 70_000]),
            0xFFFF,
        ),
    ));
    let big = snapshot_body(&vec![(1u32, 0x0001u16, &[3u8][..]); 9000]);
    packets.push((41000, 42000, compressed(0x14, &big, big.len() as u16)));
    // Traffic on the port that is not rtype is left to other dissectors.
    packets.push((50010, 41000, b"not rtype at all".to_vec()));
    let path = scratch("garbage.pcap");
    write_pcap(&path, &packets);

    // What rtype-inspect judges: every datagram with the magic but the first, which proves
    // nothing by itself and starts no conversation.
    let judged = export(&path, None)
        .iter()
        .filter(|r| r.get("kind").and_then(J::str) == Some("datagram"))
        .count();
    assert_eq!(judged, packets.len() - 2);
    for ts in tsharks("tshark_survives_garbage") {
        let out = tshark(ts, &path, &["-V"]);
        let dissected = out
            .lines()
            .filter(|l| l.starts_with("R-Type UDP Protocol"))
            .count();
        assert_eq!(
            dissected,
            judged,
            "{}: the datagrams rtype-inspect judges are dissected",
            ts.name()
        );
        assert!(out.contains("[rtype.compress.lz4]"));
        assert!(
            out.contains("\n        Entity Count: 9000\n"),
            "the large compressed snapshot decodes"
        );
        // Without a tree (tshark's default output) the same datagrams are read.
        let lines = tshark(ts, &path, &[]);
        assert_eq!(
            lines.lines().filter(|l| l.contains(" RTYPE ")).count(),
            judged
        );
    }
}

/// Random rt and rtnp datagrams: rt headers in both byte orders with random types, flags and
/// payloads (and short ones); rtnp envelopes with a corrupted byte, truncated JSON, keep-alives.
fn garbage_rt_rtnp(seed: u64, count: usize) -> Vec<(u16, u16, Vec<u8>)> {
    let codes: Vec<u8> = rt::MESSAGES
        .iter()
        .map(|m| m.code)
        .chain([0x00, 0x23, 0x7F, 0x80, 0xFF])
        .collect();
    let json_texts: [&[u8]; 6] = [
        br#"{"type":"snapshot","epoch":3,"entities":[{"networkId":1,"type":"ship","position":{"x":1.5,"y":-2}}]}"#,
        br#"{"client_id":7,"keys":{"up":true,"down":false,"left":1,"right":false,"space":false},"type":"player_input"}"#,
        br#"{"type":"assign_id","client_id":-1}"#,
        br#"{"type":"connect_request","player_name":"caf\u00e9 \ud83d\ude00"}"#,
        "{\"type\":\"lobby\",\"name\":\"é\"}".as_bytes(),
        br#"{"a":[1,2,{"b":null}],"type":3}"#,
    ];
    let envelope = |text: &[u8]| {
        let len = text.len() + 1;
        let words = len.div_ceil(8);
        let mut d = Vec::new();
        d.extend(0u32.to_le_bytes());
        d.extend(((2 + words) as u32).to_le_bytes());
        d.extend(0u32.to_le_bytes());
        d.extend([0, 0, 1, 0]);
        d.extend(1u32.to_le_bytes());
        d.extend(((len as u32) << 3 | 2).to_le_bytes());
        d.extend(text);
        d.resize(d.len() + words * 8 - text.len(), 0);
        d
    };
    let mut rng = Rng(seed);
    let mut packets = Vec::new();
    for i in 0..count {
        // One socket speaks one dialect: rt clients on 43000-43002, rtnp clients on 44000-44002.
        let client = if i % 6 <= 2 { 43000 } else { 44000 } + (i % 3) as u16;
        let server = 4242;
        let datagram = match i % 6 {
            0..=2 => {
                // A conversation keeps one byte order (43001 big-endian, the others little).
                let little = client != 43001;
                let mut d = if little {
                    vec![0x54, 0x52]
                } else {
                    vec![0x52, 0x54]
                };
                d.push(codes[rng.below(codes.len())]);
                d.push([0x00, 0x01, 0x01, 0x02, 0x21, 0x10][rng.below(6)]);
                let n = if i % 17 == 0 {
                    rng.below(10)
                } else {
                    8 + rng.below(60)
                };
                d.extend(rng.bytes(n));
                d
            }
            3 => {
                let text = json_texts[rng.below(json_texts.len())];
                let mut d = envelope(text);
                if rng.below(2) == 0 {
                    // Past the segment table and root pointer: the framing stays recognisable.
                    let at = 16 + rng.below(d.len() - 16);
                    d[at] = rng.next() as u8;
                }
                d
            }
            4 => {
                let text = json_texts[rng.below(json_texts.len())];
                let cut = 1 + rng.below(text.len());
                let mut d = text[..cut].to_vec();
                if rng.below(3) == 0 && d.len() > 1 {
                    // Past the opening brace: the text stays recognisable as JSON.
                    let at = 1 + rng.below(d.len() - 1);
                    d[at] = [b'"', b'\\', b'{', b']', 0x01, 0xC3, 0xFF][rng.below(7)];
                }
                d
            }
            _ => envelope([&b"PING"[..], b"PONG", b"", b"ping"][rng.below(4)]),
        };
        let to_server = rng.below(2) == 0;
        packets.push(if to_server {
            (client, server, datagram)
        } else {
            (server, client, datagram)
        });
    }
    packets
}

/// A datagram that proves its dialect by itself for every client socket the generated datagrams
/// use, so that rtype-inspect recognises each conversation before its garbage: rtype clients
/// 40000 and 41000-41004, rt clients 43000-43002, rtnp clients 44000-44002.
fn openers() -> Vec<(u16, u16, Vec<u8>)> {
    let mut packets: Vec<_> = [40000]
        .into_iter()
        .chain(41000..=41004)
        .map(|port| (port, 42000, client(0x01, &[])))
        .collect();
    let accept = rt::message(0x02).unwrap();
    for port in 43000..=43002 {
        let magic = if port == 43001 {
            [0x52, 0x54]
        } else {
            [0x54, 0x52]
        };
        let mut d = magic.to_vec();
        d.extend([0x02, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
        d.resize(12 + accept.fixed_size().unwrap(), 0);
        packets.push((4242, port, d));
    }
    let text = br#"{"type":"assign_id","client_id":1}"#;
    for port in 44000..=44002 {
        packets.push((4242, port, text.to_vec()));
    }
    packets
}

#[test]
fn tshark_agrees_with_export_on_rules_and_garbage() {
    let rules = scratch("compare-rules.pcap");
    let mut packets = openers();
    packets.extend(rule_datagrams().into_iter().map(|(_, d)| (40000, 40001, d)));
    packets.push((
        40000,
        40001,
        chunk(60, 2, 1, &[(2, 0x0003, &[3, 0x42, 0, 0, 0])]),
    ));
    packets.push((40000, 40001, chunk(60, 2, 0, &[(1, 0x0001, &[4])])));
    write_pcap(&rules, &packets);
    let garbage = scratch("compare-garbage.pcap");
    let mut packets = openers();
    packets.extend(garbage_datagrams(0xFACE_B00C, 1200));
    packets.extend(garbage_rt_rtnp(0x5EED_0003, 600));
    write_pcap(&garbage, &packets);
    for ts in tsharks("tshark_agrees_with_export_on_rules_and_garbage") {
        let seen = compare(ts, &rules, None);
        assert_eq!(seen.reassembled, 1);
        for (id, _) in rule_datagrams() {
            assert!(seen.experts.contains_key(id), "{id} compared");
        }
        let seen = compare(ts, &garbage, None);
        assert!(seen.datagrams > 1700, "{}", seen.datagrams);
        compare(ts, &garbage, Some("reference-17byte"));
    }
}

// ------------------------------------------------------------------------------------------------
// Recognised by evidence, then the whole conversation judged (issue 14)
// ------------------------------------------------------------------------------------------------

#[test]
fn tshark_claims_what_export_judges_among_desktop_traffic() {
    // A real session among DNS, mDNS, SSDP, QUIC, a JSON broadcast, text starting "RT", zeros like
    // a segment table and a lone magic: `compare` holds the frames tshark claims equal to the
    // export's datagrams (both ways) with the same expert infos, and -z expert counts them.
    let capture = sample("mixed-desktop.pcap");
    let judged = export(&capture, None)
        .iter()
        .filter(|r| r.get("kind").and_then(J::str) == Some("datagram"))
        .count();
    let udp = tshark(Tshark::Host, &capture, &["-Y", "udp"])
        .lines()
        .count();
    assert!(udp > judged + 20, "{udp} UDP frames, {judged} judged");
    for ts in tsharks("tshark_claims_what_export_judges_among_desktop_traffic") {
        let seen = compare(ts, &capture, None);
        assert_eq!(seen.datagrams, judged, "{}", ts.name());
        assert_eq!(expert_counts(ts, &capture), check_counts(&capture));
    }
}

/// `file` with faults injected (as tests/recognition.rs injects them), written to scratch.
fn faulty(
    file: &str,
    from: usize,
    step: usize,
    count: usize,
    fault: impl Fn(usize, &mut [u8]),
) -> PathBuf {
    let (bytes, broken) = faults::inject(
        &std::fs::read(fixture(file)).unwrap(),
        from,
        step,
        count,
        fault,
    );
    assert_eq!(broken.len(), count);
    let path = scratch(&format!("faulty-{file}"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn tshark_judges_a_broken_magic_in_a_recognised_conversation() {
    // 30 rtype datagrams with one bit of the magic flipped (half with the CRC fixed over it), and
    // 15 rt datagrams with "TR" turned into "RT" (the other byte order) or a bit flipped: each is
    // still its conversation's, with the findings rtype-inspect gives it.
    let rtype = faulty("reference-17byte-1client.pcap", 20, 97, 30, |n, d| {
        d[n % 4] ^= 1 << (n % 8);
        if n % 2 == 1 {
            let crc = crc32fast::hash(&d[..d.len() - 4]);
            let end = d.len();
            d[end - 4..].copy_from_slice(&crc.to_be_bytes());
        }
    });
    let rt = faulty("rt-two-players.pcap", 200, 251, 15, |n, d| {
        if n % 2 == 0 {
            d[..2].copy_from_slice(b"RT");
        } else {
            d[1] ^= 0x20;
        }
    });
    for ts in tsharks("tshark_judges_a_broken_magic_in_a_recognised_conversation") {
        let seen = compare(ts, &rtype, Some("reference-17byte"));
        assert_eq!(
            seen.experts.get("rtype.header.magic"),
            Some(&30),
            "{}",
            ts.name()
        );
        assert_eq!(
            seen.experts.get("rtype.crc.mismatch"),
            Some(&15),
            "{}",
            ts.name()
        );
        let seen = compare(ts, &rt, None);
        assert_eq!(
            seen.experts.get("rt.byte-order.switch"),
            Some(&8),
            "{}",
            ts.name()
        );
        assert_eq!(
            seen.experts.get("rt.header.magic"),
            Some(&7),
            "{}",
            ts.name()
        );
        assert_eq!(expert_counts(ts, &rt), check_counts(&rt));
    }
}

// ------------------------------------------------------------------------------------------------
// Lua 5.4 (Wireshark 4.4 and later)
// ------------------------------------------------------------------------------------------------

/// A stand-in for the Wireshark Lua API the dissector uses, for a plain Lua interpreter.
const MOCK_WIRESHARK: &str = r#"-- A stand-in for the parts of Wireshark's Lua API the generated dissector uses, for running it
-- under a plain Lua interpreter (Lua 5.4, as Wireshark 4.4 embeds): numbers read from packets
-- are integers there, `string.format("%d")` refuses fractions, and `bit` is a shim. Reads
-- datagrams ("frame seconds sport dport hex" per line) on stdin; prints each one's protocol and the rule
-- IDs of its expert infos. arg[2] "tree" hands the dissector a drawn tree, "none" no tree.
local script, mode = arg[1], arg[2]

local function norm(x)
    if math.type(x) == "float" then
        assert(x == math.floor(x), "bit operation on a fraction")
        x = math.tointeger(x) or error("bit operation on a huge number")
    end
    x = x & 0xFFFFFFFF
    if x >= 0x80000000 then x = x - 0x100000000 end
    return x
end
bit = {
    tobit = norm,
    band = function(a, b, ...) local r = norm(a) & norm(b) for _, c in ipairs({ ... }) do r = r & norm(c) end return norm(r) end,
    bor = function(a, b, ...) local r = norm(a) | norm(b) for _, c in ipairs({ ... }) do r = r | norm(c) end return norm(r) end,
    bxor = function(a, b, ...) local r = norm(a) ~ norm(b) for _, c in ipairs({ ... }) do r = r ~ norm(c) end return norm(r) end,
    bnot = function(a) return norm(~norm(a)) end,
    rshift = function(a, n) return norm((norm(a) & 0xFFFFFFFF) >> n) end,
    lshift = function(a, n) return norm(norm(a) << n) end,
}

base = setmetatable({}, { __index = function(_, k) return k end })
expert = {
    group = setmetatable({}, { __index = function(_, k) return k end }),
    severity = setmetatable({}, { __index = function(_, k) return k end }),
}
local EXPERTS_SEEN
ProtoExpert = { new = function(abbr) return { abbr = abbr } end }
local function field(kind)
    return function(abbr, label, ...) return { abbr = abbr, kind = kind } end
end
ProtoField = setmetatable({}, { __index = function(_, kind) return field(kind) end })
Pref = setmetatable({}, { __index = function() return function(_, default) return default end end })
-- The GUI, when run with `lua5.4 -e 'GUI = "packet"'` (a Wireshark with register_packet_menu) or
-- "menu" (one without): the menus are listed and each Follow entry is invoked, with a packet
-- naming entities 68 and 70 and rt's 10012, or with ids typed in its dialog.
local MENUS = {}
function gui_enabled() return GUI ~= nil end
function register_stat_cmd_arg() end
function register_menu(name, action) MENUS[#MENUS + 1] = { "menu", name, action } end
if GUI == "packet" then
    function register_packet_menu(name, action, fields)
        MENUS[#MENUS + 1] = { "packet menu on " .. fields, name, action }
    end
end
local FILTER
function set_filter(f) FILTER = f end
function apply_filter() print("apply_filter " .. FILTER) end
function new_dialog(title, action, label)
    print("dialog " .. title .. ": " .. label)
    for _, typed in ipairs({ "-1", "x", "4294967296", "1.5", "68" }) do action(typed) end
end
local udp = { add = function() end, remove = function() end, add_for_decode_as = function() end }
DissectorTable = { get = function() return udp end }
Dissector = { get = function() return { call = function() end } end }

local HEURISTICS = {}
function Proto(name)
    local p = { name = name, prefs = {} }
    function p:register_heuristic(_, fn) HEURISTICS[#HEURISTICS + 1] = { name = name, fn = fn } end
    return p
end

-- Tvb, TvbRange, ByteArray over Lua strings.
local Tvb, Range, Bytes = {}, {}, {}
local function new_tvb(s) return setmetatable({ s = s }, Tvb) end
local function new_range(tvb, off, len)
    assert(off >= 0 and len >= 0 and off + len <= #tvb.s, "range out of bounds")
    return setmetatable({ parent = tvb, off = off, n = len }, Range)
end
Tvb.__index = Tvb
Tvb.__call = function(t, off, len)
    off = off or 0
    return new_range(t, off, len or (#t.s - off))
end
function Tvb:len() return #self.s end
function Tvb:reported_len() return #self.s end
function Tvb:raw(off, len) off = off or 0 return self.s:sub(off + 1, off + (len or #self.s - off)) end
Range.__index = Range
function Range:raw() return self.parent.s:sub(self.off + 1, self.off + self.n) end
function Range:len() return self.n end
local function unpack(r, fmt)
    return (string.unpack(fmt, r:raw()))
end
local function int_fmt(r, order, signed)
    assert(r.n >= 1 and r.n <= 4, "integer of " .. r.n .. " bytes")
    return order .. (signed and "i" or "I") .. r.n
end
function Range:uint() return unpack(self, int_fmt(self, ">", false)) end
function Range:le_uint() return unpack(self, int_fmt(self, "<", false)) end
function Range:int() return unpack(self, int_fmt(self, ">", true)) end
function Range:le_int() return unpack(self, int_fmt(self, "<", true)) end
function Range:float() assert(self.n == 4) return unpack(self, ">f") end
function Range:le_float() assert(self.n == 4) return unpack(self, "<f") end
function Range:bytes() return ByteArray.new(self:raw(), true) end
function Range:tvb() return new_tvb(self:raw()) end
Bytes.__index = Bytes
ByteArray = {
    new = function(s, raw)
        s = s or ""
        if not raw then s = (s:gsub("%s", ""):gsub("..", function(h) return string.char(tonumber(h, 16)) end)) end
        return setmetatable({ s = s }, Bytes)
    end,
}
function Bytes:append(other) self.s = self.s .. other.s end
function Bytes:len() return #self.s end
function Bytes:tvb() return new_tvb(self.s) end
function Bytes:tohex() return (self.s:gsub(".", function(c) return string.format("%02X", c:byte()) end)) end

-- Tree items: checked for what Wireshark would refuse, otherwise inert.
local Item = {}
Item.__index = Item
-- A drawn tree's items have a text and are visible; without a tree they have no text.
local function item() return setmetatable(mode == "tree" and { text = "", visible = true } or {}, Item) end
function Item:add(a, b, c)
    if type(a) == "table" and a.kind and getmetatable(b) == Range then
        local k = a.kind
        if (k:match("^uint") or k:match("^int")) and c == nil then assert(b.n <= 4, a.abbr .. " over " .. b.n .. " bytes") end
        if k == "string" and c ~= nil then assert(type(c) == "string", a.abbr) end
        if (k == "double" or k == "float") and c ~= nil then assert(type(c) == "number", a.abbr) end
    end
    return item()
end
Item.add_le = Item.add
function Item:append_text() return self end
function Item:prepend_text() return self end
function Item:set_generated() return self end
function Item:set_hidden() return self end
function Item:set_len() return self end
function Item:set_text() return self end
function Item:add_tvb_expert_info(ex, range, text)
    assert(getmetatable(range) == Range and type(text) == "string")
    EXPERTS_SEEN[#EXPERTS_SEEN + 1] = ex.abbr
    return self
end
function Item:add_proto_expert_info(ex, text)
    assert(type(text) == "string")
    EXPERTS_SEEN[#EXPERTS_SEEN + 1] = ex.abbr:match("^rt%l*%.malformed$") and ex.abbr .. "(" .. text .. ")" or ex.abbr
    return self
end

local chunk = assert(loadfile(script))
chunk()
if GUI then
    for _, m in ipairs(MENUS) do
        print(m[1] .. ": " .. m[2])
        if m[2]:match("Follow") then
            m[3]({ name = "frame.number", value = 9 }, { name = "rtype.entity.id", value = 68 },
                { name = "rtype.entity.id", value = 70 }, { name = "rt.entity.id", value = 10012 })
        end
    end
    return
end

local column = { set = function() end, append = function() end }
for line in io.lines() do
    local frame, ts, sport, dport, hex = line:match("^(%d+) (%d+) (%d+) (%d+) (%x*)$")
    local tvb = new_tvb(ByteArray.new(hex).s)
    local pinfo = {
        number = tonumber(frame), visited = false, src = "127.0.0.1", dst = "127.0.0.1",
        src_port = tonumber(sport), dst_port = tonumber(dport), abs_ts = tonumber(ts),
        cols = { protocol = column, info = column },
    }
    EXPERTS_SEEN = {}
    local proto = "-"
    for _, h in ipairs(HEURISTICS) do
        if h.fn(tvb, pinfo, item()) then proto = h.name break end
    end
    table.sort(EXPERTS_SEEN)
    print(frame .. " " .. proto .. " " .. table.concat(EXPERTS_SEEN, " "))
end
"#;

/// Wireshark 4.4 embeds Lua 5.4, where integers and floats differ: the dissector runs there over
/// the same garbage and raises the same expert infos as in tshark 4.0 (Lua 5.2). Skips when no
/// `lua5.4` is installed.
#[test]
fn lua_5_4_raises_what_tshark_raises() {
    if !tsharks("lua_5_4_raises_what_tshark_raises").contains(&Tshark::Host) {
        return;
    }
    if !Command::new("lua5.4")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip::missing(
            "lua_5_4_raises_what_tshark_raises",
            "no lua5.4 (apt-get install lua5.4)",
        );
        return;
    }
    let mut packets: Vec<_> = rule_datagrams()
        .into_iter()
        .map(|(_, d)| (40000, 40001, d))
        .collect();
    packets.extend(garbage_datagrams(0x0BAD_5EED, 500));
    packets.extend(garbage_rt_rtnp(0x5EED_0004, 300));
    let capture = scratch("lua54.pcap");
    write_pcap(&capture, &packets);
    let mock = scratch("mock-wireshark.lua");
    std::fs::write(&mock, MOCK_WIRESHARK).unwrap();
    // write_pcap stamps frame i (from 0) at i seconds.
    let input: String = packets
        .iter()
        .enumerate()
        .map(|(i, (sport, dport, d))| {
            let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
            format!("{} {i} {sport} {dport} {hex}\n", i + 1)
        })
        .collect();
    let frames = dissect(Tshark::Host, &capture, None);
    let mut diffs = Vec::new();
    // With a drawn tree and without one (tshark's default), the same expert infos.
    for mode in ["tree", "none"] {
        let stdout = run_mock(&mock, mode, &input);
        assert_eq!(stdout.lines().count(), packets.len());
        for line in stdout.lines() {
            let mut words = line.split(' ').filter(|w| !w.is_empty());
            let number: u64 = words.next().unwrap().parse().unwrap();
            let proto = words.next().unwrap();
            let lua54: Vec<&str> = words.filter(|w| *w != "rtype.profile.suggested").collect();
            let (tshark_proto, mut tshark) = match frames.get(&number) {
                Some(f) => (
                    f.proto.as_str(),
                    f.experts
                        .iter()
                        .chain(&f.reassembled_experts)
                        .map(String::as_str)
                        .collect::<Vec<_>>(),
                ),
                None => ("-", Vec::new()),
            };
            tshark.sort_unstable();
            if (proto, &lua54) != (tshark_proto, &tshark) {
                diffs.push(format!(
                    "frame {number} ({mode}): Lua 5.4 {proto} {lua54:?}, tshark {tshark_proto} {tshark:?}"
                ));
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "{} frames differ:\n{}",
        diffs.len(),
        diffs[..diffs.len().min(20)].join("\n")
    );
}

/// Runs the Lua 5.4 stand-in over `input` with a drawn tree or none (`mode`); its stdout.
fn run_mock(mock: &Path, mode: &str, input: &str) -> String {
    let mut child = Command::new("lua5.4")
        .arg(mock)
        .arg(dissector())
        .arg(mode)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let writer =
        std::thread::spawn(move || std::io::Write::write_all(&mut stdin, input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "lua5.4 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

// ------------------------------------------------------------------------------------------------
// A capture cut by a snap length
// ------------------------------------------------------------------------------------------------

/// Rules a cut datagram would break only because the capture lacks its end.
const FALSE_WHEN_CUT: &[&str] = &[
    "rtype.datagram.short",
    "rtype.header.payload-len",
    "rtype.crc.mismatch",
    "rtype.compress.lz4",
    "rtype.compress.orig-size",
    "rtype.compress.not-smaller",
    "rtype.message.truncated",
    "rtype.message.trailing",
    "rtype.message.size",
    "rt.short",
    "rt.message.truncated",
    "rt.message.trailing",
    "rt.message.size",
    "rtnp.envelope.malformed",
    "rtnp.json.invalid",
];

/// `editcap -s SNAPLEN` of `capture`, and how many of its frames the cut shortened (as tshark
/// counts them: frame.len against frame.cap_len, no dissector).
fn cut_capture(capture: &Path, snaplen: u32) -> (PathBuf, usize) {
    let cut = scratch(&format!(
        "cut{snaplen}-{}",
        capture.file_name().unwrap().to_string_lossy()
    ));
    let status = Command::new("editcap")
        .arg("-s")
        .arg(snaplen.to_string())
        .arg(capture)
        .arg(&cut)
        .status()
        .expect("editcap runs");
    assert!(status.success());
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&cut)
        .args(["-T", "fields", "-e", "frame.len", "-e", "frame.cap_len"])
        .output()
        .unwrap();
    let shortened = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            let v: Vec<u64> = l.split('\t').filter_map(|x| x.parse().ok()).collect();
            v.len() == 2 && v[0] > v[1]
        })
        .count();
    (cut, shortened)
}

/// A capture cut by a snap length (`editcap -s 60`, `-s 200`) is judged on what it holds, the same
/// in rtype-inspect and in tshark: one `capture.snaplen` per cut datagram, its CRC unverified and
/// its missing bytes "not captured", and none of the rules only the missing bytes would settle.
#[test]
fn a_cut_capture_is_judged_on_what_it_holds() {
    let list = tsharks("a_cut_capture_is_judged_on_what_it_holds");
    if !list.contains(&Tshark::Host) {
        return;
    }
    // 60 bytes leave an rtype header and one payload byte; 200 cut only the larger datagrams.
    for (capture, snaplens) in [
        (sample("clean-session.pcap"), &[60][..]),
        (fixture("reference-17byte-1client.pcap"), &[60, 200][..]),
        (fixture("rt-two-players.pcap"), &[60][..]),
        (fixture("rtnp-solo.pcap"), &[60][..]),
    ] {
        for &snaplen in snaplens {
            let (cut, shortened) = cut_capture(&capture, snaplen);
            let what = format!("{} -s {snaplen}", capture.display());
            // rtype-inspect: one capture.snaplen per cut frame, and no rule of FALSE_WHEN_CUT on
            // the datagram of such a frame.
            let records = export(&cut, None);
            let cut_frames: std::collections::HashSet<u64> = records
                .iter()
                .filter(|r| r.get("id").and_then(J::str) == Some("capture.snaplen"))
                .filter_map(|r| r.get("frame").and_then(J::u64))
                .collect();
            assert_eq!(
                cut_frames.len(),
                shortened,
                "{what}: rtype-inspect, one capture.snaplen per cut frame"
            );
            for record in records.iter().filter(|r| {
                r.get("kind").and_then(J::str) == Some("datagram")
                    && r.get("frame")
                        .and_then(J::u64)
                        .is_some_and(|f| cut_frames.contains(&f))
            }) {
                let violations = format!("{:?}", record.get("violations"));
                for id in FALSE_WHEN_CUT {
                    assert!(
                        !violations.contains(&format!("S(\"{id}\")")),
                        "{what}: rtype-inspect reports {id} on a cut frame: {violations}"
                    );
                }
            }
            // tshark: the same expert infos, frame by frame (the CRC unverified).
            for &ts in &list {
                let seen = compare(ts, &cut, None);
                assert_eq!(
                    seen.cut,
                    shortened,
                    "{what}: {} sees the cut frames",
                    ts.name()
                );
            }
        }
    }
    // What the capture lacks is shown as such.
    let (cut, _) = cut_capture(&fixture("reference-17byte-1client.pcap"), 60);
    let out = tshark(Tshark::Host, &cut, &["-V", "-Y", "frame.number == 558"]);
    assert!(
        out.contains("[CRC32 Status: Unverified (2) (not captured)]"),
        "{out}"
    );
    assert!(out.contains("    [65 bytes not captured]\n"), "{out}");
    assert!(out.contains("(18 of 83 bytes captured)"), "{out}");
}

// ------------------------------------------------------------------------------------------------
// Trees faked or absent, preferences, statistics
// ------------------------------------------------------------------------------------------------

/// Frame numbers tshark shows with `-Y expr` (and `extra` options): in its one-line output the
/// tree is only faked for the filter (the dissector adds fields flat, by value); with `-V` it is
/// drawn.
fn filtered(ts: Tshark, capture: &Path, expr: &str, drawn: bool, extra: &[&str]) -> Vec<u64> {
    let mut args = vec!["-Y", expr];
    if drawn {
        args.push("-V");
    }
    args.extend(extra);
    let out = tshark(ts, capture, &args);
    out.lines()
        .filter_map(|l| {
            if drawn {
                l.strip_prefix("Frame ")?.split(':').next()?.parse().ok()
            } else {
                l.split_whitespace().next()?.parse().ok()
            }
        })
        .collect()
}

/// The dissector adds fields by value to a tree Wireshark only fakes (to filter or colour the
/// packet list), and with their bytes and subtrees to a drawn one: a filter selects the same
/// frames either way, in both tsharks.
#[test]
fn filters_select_the_same_frames_whether_the_tree_is_drawn_or_not() {
    let cases: &[(&str, &str, usize)] = &[
        (
            "reference-17byte-1client.pcap",
            "rtype.snapshot.entity.id == 0 && rtype.conversation == 1 && rtype.crc.status == 1",
            800,
        ),
        (
            "reference-17byte-1client.pcap",
            "rtype.input.input_flags.fire == 1",
            600,
        ),
        (
            "reference-17byte-1client.pcap",
            "rtype.compressed == 1 && rtype.version == 1",
            673,
        ),
        (
            "reference-17byte-1client.pcap",
            "rtype.levelinit.archetype.sprite_id == \"bullet\"",
            1,
        ),
        (
            "reference-17byte-1client.pcap",
            "rtype.reassembled.entity.update_mask == 0x047f",
            16,
        ),
        ("reference-17byte-1client.pcap", "rtype.snapshot.layout", 1),
        (
            "reference-15byte-levelevents.pcap",
            "rtype.levelevent.event_type",
            4,
        ),
        (
            "rt-two-players.pcap",
            "rt.transform_snapshot.entity.pos_x > 100 && rt.reliable == 0",
            817,
        ),
        (
            "rtnp-solo.pcap",
            "rtnp.type == \"snapshot\" && rtnp.conversation == 1",
            321,
        ),
    ];
    for ts in tsharks("filters_select_the_same_frames_whether_the_tree_is_drawn_or_not") {
        for (name, expr, at_least) in cases {
            let capture = fixture(name);
            let faked = filtered(ts, &capture, expr, false, &[]);
            let drawn = filtered(ts, &capture, expr, true, &[]);
            assert_eq!(faked, drawn, "{} {name}: {expr}", ts.name());
            assert!(
                faked.len() >= *at_least,
                "{} {name}: {expr} selects {}",
                ts.name(),
                faked.len()
            );
        }
        // A profile's fields, by the preference, with the same filter names.
        let capture = fixture("reference-17byte-1client.pcap");
        let profile = ["-o", "rtype.profile:reference-17byte"];
        let expr =
            "rtype.snapshot.entity.pos_x > 20 && rtype.snapshot.entity.pos_x.raw > 200 && !rtype.snapshot.undefined-bit";
        let faked = filtered(ts, &capture, expr, false, &profile);
        assert_eq!(
            faked,
            filtered(ts, &capture, expr, true, &profile),
            "{expr}"
        );
        assert!(faked.len() > 100, "{expr}: {}", faked.len());
    }
}

/// A tshark test on a machine without tshark skips, saying so, on a developer's machine, and
/// fails under `CI=true` (tests/support/skip.rs): this test binary, run again on one tshark test
/// with no tshark on PATH and no chroot.
#[test]
fn a_missing_tshark_skips_outside_ci_and_fails_in_ci() {
    let run = |ci: Option<&str>| {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "tshark_expert_counts_match_check", "--nocapture"])
            .env("PATH", "/nonexistent")
            .env("RTYPE_TRIXIE_ROOT", "/nonexistent")
            .env("RTYPE_SID_ROOT", "/nonexistent")
            .env_remove("RTYPE_REQUIRE_TSHARK_4_4")
            .env_remove("RTYPE_REQUIRE_TSHARK_4_6")
            .env_remove("CI");
        if let Some(ci) = ci {
            cmd.env("CI", ci);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (passed, stderr) = run(None);
    assert!(passed, "{stderr}");
    assert!(
        stderr.contains("skipping the tshark 4.0 half of tshark_expert_counts_match_check: tshark is not on PATH"),
        "{stderr}"
    );
    let (passed, stderr) = run(Some("false"));
    assert!(passed, "{stderr}");
    let (passed, stderr) = run(Some("true"));
    assert!(!passed, "{stderr}");
    assert!(
        stderr.contains("the tshark 4.0 half of tshark_expert_counts_match_check: tshark is not on PATH (apt-get install tshark) (CI=true: a missing tool fails the test instead of skipping it)"),
        "{stderr}"
    );
}

/// Wireshark fakes a tree to filter on (`-Y`, colouring rules), to fill custom columns and to
/// extract `-T fields`: the dissector adds its fields to it in every tshark. 4.6 gives a faked
/// tree's root no text, which the dissector once took for no tree: every filter on its fields
/// then selected nothing, every custom column and field was empty.
#[test]
fn filters_fields_and_custom_columns_find_the_fields_in_every_tshark() {
    let session = sample("clean-session.pcap");
    for ts in tsharks("filters_fields_and_custom_columns_find_the_fields_in_every_tshark") {
        for (capture, proto, frames) in [
            (session.clone(), "rtype", 593),
            (fixture("rt-two-players.pcap"), "rt", 4981),
            (fixture("rtnp-solo.pcap"), "rtnp", 790),
        ] {
            assert_eq!(
                filtered(ts, &capture, proto, false, &[]).len(),
                frames,
                "{}: -Y {proto} on {}",
                ts.name(),
                capture.display()
            );
        }
        let expr = "rtype.msg_type == 0x14";
        assert_eq!(
            filtered(ts, &session, expr, false, &[]).len(),
            240,
            "{}: -Y {expr}",
            ts.name()
        );
        let fields = tshark(ts, &session, &["-T", "fields", "-e", "rtype.msg_type"]);
        let mut types: BTreeMap<&str, usize> = BTreeMap::new();
        for line in fields.lines() {
            *types.entry(line).or_default() += 1;
        }
        assert_eq!(
            (types.len(), types.get("0x14"), types.get("")),
            (27, Some(&240), None),
            "{}: -T fields -e rtype.msg_type",
            ts.name()
        );
        let column = r#"gui.column.format:"No.","%m","Message","%Cus:rtype.msg_type:0:R""#;
        let list = tshark(ts, &session, &["-o", column, "-c", "4"]);
        let rows: Vec<String> = list
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            rows,
            [
                "1 CLIENT_HELLO",
                "2 SERVER_HELLO",
                "3 CLIENT_JOIN_REQUEST",
                "4 SERVER_JOIN_ACCEPT"
            ],
            "{}: a custom column",
            ts.name()
        );
    }
}

/// The one place where what Wireshark itself does differently from version to version is
/// normalised, before the dissector's output in 4.4 and 4.6 is compared with 4.0's:
/// - a long value is cut short at another length (4.0: 36 bytes of a byte string, 4.6: the
///   whole label) and marked otherwise ("Label [truncated]: ", "[ [truncated]Expert…" in 4.0,
///   "[truncated]Label: " in 4.4, "Label […]: ", "[[…] Expert…" in 4.6): the markers are
///   dropped and every value that was cut, or is longer than 64 characters, is cut to 64
///   characters and "…" (the values themselves are compared with `rtype-inspect export`'s in
///   full, version by version, by `compare`);
/// - a NaN is "nan" or "-nan" depending on the C library's printf: always "nan";
/// - a relative time (`FT_RELATIVE_TIME`) is shown in seconds up to 4.4 and in the largest unit
///   under its value from 4.6 on ("0.033333000 seconds", "33.333000 milliseconds", "1 second"):
///   always in seconds, with 9 decimals;
/// - lower layers and other protocols (their names, fields and expert infos change between
///   versions) are left out by the caller: only the frames, subtrees and expert infos of the
///   dissector's own protocols are compared.
fn wireshark_neutral(text: &str) -> String {
    // The markers, each with what replaces it: before a bracketed label, after a label, before
    // a label.
    static RELATIVE: OnceLock<regex::Regex> = OnceLock::new();
    let relative = RELATIVE.get_or_init(|| {
        regex::Regex::new(
            r": (-?[0-9]+(?:\.[0-9]+)?) (second|millisecond|microsecond|nanosecond)s?",
        )
        .unwrap()
    });
    static MARKS: OnceLock<[(regex::Regex, &str); 3]> = OnceLock::new();
    let marks = MARKS.get_or_init(|| {
        let re = |r: &str| regex::Regex::new(r).unwrap();
        [
            (re(r"\[ ?\[(truncated|…)\] ?"), "["),
            (re(r" \[(truncated|…)\]:"), ":"),
            (re(r"\[(truncated|…)\] ?"), ""),
        ]
    });
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut line = line.replace("-nan", "nan");
        line = relative
            .replace_all(&line, |c: &regex::Captures| {
                let value: f64 = c[1].parse().unwrap();
                let per_second = match &c[2] {
                    "second" => 1.0,
                    "millisecond" => 1e3,
                    "microsecond" => 1e6,
                    _ => 1e9,
                };
                format!(": {:.9} seconds", value / per_second)
            })
            .into_owned();
        let mut truncated = false;
        for (mark, with) in marks {
            truncated |= mark.is_match(&line);
            line = mark.replace_all(&line, *with).into_owned();
        }
        match line.split_once(": ") {
            Some((label, value))
                if label.chars().count() <= 100
                    && (value.ends_with('…') || value.chars().count() > 64) =>
            {
                let cut: String = value.trim_end_matches('…').chars().take(64).collect();
                out.push_str(&format!("{label}: {cut}…\n"));
            }
            // 4.0 cuts a long label at 240 bytes, later versions at 240 characters; 4.0's
            // marker leaves a space after the tree's indentation (4 per level).
            _ if truncated => {
                let text = line.trim_start();
                let indent = (line.len() - text.len()) / 4 * 4;
                let cut: String = text.chars().take(180).collect();
                out.push_str(&format!("{:indent$}{cut}…\n", ""));
            }
            _ => {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// What the dissector shows of `capture` in `ts`, view by view (Wireshark's own differences
/// normalised): the packet list's columns of its frames, its subtrees under each frame's number,
/// its expert infos in `-z expert` and Statistics → R-Type (`-z rtype,stat`).
fn views(ts: Tshark, capture: &Path) -> Vec<(&'static str, String)> {
    const OURS: &str = "rtype || rt || rtnp";
    let mut trees = String::new();
    let mut keep = false;
    for line in tshark(ts, capture, &["-Y", OURS, "-V"]).lines() {
        if !line.starts_with(' ') {
            keep = line.starts_with("R-Type ");
            if let Some(frame) = line.strip_prefix("Frame ") {
                trees.push_str(frame.split(':').next().unwrap_or(""));
                trees.push('\n');
            }
        }
        if keep {
            trees.push_str(line);
            trees.push('\n');
        }
    }
    // Rows of the dissector's protocols, each with its severity's heading.
    let mut experts = String::new();
    let mut heading = "";
    let text = tshark(ts, capture, &["-q", "-z", "expert"]);
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if line.ends_with(')') && line.contains(" (") && !line.starts_with(' ') {
            heading = line.split(" (").next().unwrap();
        } else if words.len() > 3 && ["RTYPE", "RT", "RTNP"].contains(&words[2]) {
            experts.push_str(&format!("{heading} | {}\n", words.join(" ")));
        }
    }
    vec![
        ("columns", tshark(ts, capture, &["-Y", OURS])),
        ("trees", trees),
        ("expert infos", experts),
        (
            "statistics",
            tshark(ts, capture, &["-q", "-z", "rtype,stat"]),
        ),
    ]
    .into_iter()
    .map(|(name, text)| (name, wireshark_neutral(&text)))
    .collect()
}

/// Every sample and real capture shows the same in tshark 4.4 and 4.6 as in 4.0: columns, trees,
/// expert infos and statistics, once Wireshark's own differences are normalised
/// (`wireshark_neutral`).
#[test]
fn every_tshark_shows_what_tshark_4_0_shows() {
    let list = tsharks("every_tshark_shows_what_tshark_4_0_shows");
    if !list.contains(&Tshark::Host) {
        return;
    }
    let mut captures: Vec<PathBuf> = ["samples", "tests/fixtures"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(root().join(dir)).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.to_string_lossy();
            name.ends_with(".pcap") || name.ends_with(".pcapng") || name.ends_with(".pcap.gz")
        })
        .collect();
    captures.sort();
    assert_eq!(captures.len(), 20, "{captures:?}");
    for capture in &captures {
        let base = views(Tshark::Host, capture);
        assert!(base[0].1.lines().count() > 0 || capture.ends_with("mixed-desktop.pcap"));
        for &ts in list.iter().filter(|&&ts| ts != Tshark::Host) {
            for ((view, want), (_, got)) in base.iter().zip(views(ts, capture)) {
                if let Some((n, (a, b))) = want
                    .lines()
                    .zip(got.lines())
                    .enumerate()
                    .find(|(_, (a, b))| a != b)
                {
                    panic!(
                        "{} {}: {view}, line {}:\n  4.0: {a}\n  {}: {b}",
                        ts.name(),
                        capture.display(),
                        n + 1,
                        ts.name()
                    );
                }
                assert_eq!(
                    want.lines().count(),
                    got.lines().count(),
                    "{} {}: {view}, lines",
                    ts.name(),
                    capture.display()
                );
            }
        }
    }
}

/// Without a tree (tshark's default output, `-z expert`, the first pass of Wireshark without
/// colouring) the dissector raises the same expert infos as with one: per rule, `-z expert`
/// counts what the drawn trees show, the reassembled snapshots' and the profile suggestion
/// included.
#[test]
fn without_a_tree_the_same_expert_infos() {
    for ts in tsharks("without_a_tree_the_same_expert_infos") {
        for capture in [
            fixture("reference-17byte-1client.pcap"),
            fixture("reference-15byte-levelevents.pcap"),
            fixture("rt-two-players.pcap"),
            sample("violations-chunks.pcap"),
            sample("violations-snapshot.pcap"),
        ] {
            let mut drawn: BTreeMap<String, usize> = BTreeMap::new();
            for frame in dissect(ts, &capture, None).values() {
                for id in frame.experts.iter().chain(&frame.reassembled_experts) {
                    *drawn.entry(id.clone()).or_default() += 1;
                }
                if frame.suggested.is_some() {
                    *drawn.entry("rtype.profile.suggested".into()).or_default() += 1;
                }
            }
            assert_eq!(
                expert_counts(ts, &capture),
                drawn,
                "{} {}: -z expert, then the drawn trees",
                ts.name(),
                capture.display()
            );
        }
    }
}

/// A snapshot reassembled from chunks reports what stops its decoding as a SERVER_SNAPSHOT with
/// the same payload does (rtype-inspect's violations for that datagram).
#[test]
fn a_reassembled_snapshot_reports_as_a_datagram_would() {
    // Chunk 0 of each set holds an entity the document cannot read past (bit 10, then a
    // reserved bit 7, then a field cut short); chunk 1 a readable one.
    let stops: [(u16, &[u8]); 3] = [
        (0x0401, &[3, 9, 9]),
        (0x0081, &[3, 1, 2]),
        (0x0002, &[1, 2]),
    ];
    let mut packets = Vec::new();
    let mut singles = Vec::new();
    for (k, (mask, fields)) in stops.iter().enumerate() {
        let tick = 70 + k as u32;
        let good: (u32, u16, &[u8]) = (2, 0x0001, &[4]);
        packets.push((40000, 40001, chunk(tick, 2, 1, &[good])));
        packets.push((40000, 40001, chunk(tick, 2, 0, &[(1, *mask, fields)])));
        // The same snapshot in one datagram: count, then the blocks in chunk order.
        let mut body = snapshot_body(&[(1, *mask, fields)]);
        body[1] = 2;
        body.extend(&snapshot_body(&[good])[2..]);
        singles.push((40000, 40001, server(0x14, &body)));
    }
    let sets = scratch("reassembled-stops.pcap");
    write_pcap(&sets, &packets);
    let alone = scratch("reassembled-alone.pcap");
    write_pcap(&alone, &singles);
    let expected: Vec<Vec<String>> = export(&alone, None)
        .iter()
        .filter(|r| r.get("kind").and_then(J::str) == Some("datagram"))
        .map(|r| match r.get("violations") {
            Some(J::A(list)) => list
                .iter()
                .filter_map(|v| v.get("id").and_then(J::str).map(str::to_string))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(
        expected,
        [
            ["rtype.snapshot.undefined-bit"],
            ["rtype.snapshot.reserved-bit"],
            ["rtype.message.truncated"]
        ]
    );
    for ts in tsharks("a_reassembled_snapshot_reports_as_a_datagram_would") {
        let frames = dissect(ts, &sets, None);
        let reassembled: Vec<Vec<String>> = frames
            .values()
            .filter(|f| !f.reassembled.is_empty())
            .map(|f| f.reassembled_experts.clone())
            .collect();
        assert_eq!(reassembled, expected, "{}", ts.name());
    }
}

/// Preferences: the CRC check, the heuristics (then "Decode As" or the port still work), the
/// port.
#[test]
fn preferences_turn_checks_and_heuristics_off() {
    for ts in tsharks("preferences_turn_checks_and_heuristics_off") {
        let crc = sample("violations-crc.pcap");
        let on = tshark(ts, &crc, &["-V", "-Y", "rtype.crc.status == 0"]);
        assert!(on.contains("[rtype.crc.mismatch]"), "{}", ts.name());
        let off = tshark(ts, &crc, &["-V", "-o", "rtype.check_crc:FALSE"]);
        assert!(
            !off.contains("rtype.crc.mismatch") && off.contains("[CRC32 Status: Unverified (2)]")
        );

        // The 17-byte capture's client sends to port 50010 (the port preference's default), the
        // server answers from 49316: the heuristic finds those.
        let capture = fixture("reference-17byte-1client.pcap");
        let count = |args: &[&str]| {
            tshark(ts, &capture, args)
                .lines()
                .filter(|l| l.contains(" RTYPE "))
                .count()
        };
        assert_eq!(count(&[]), 3202);
        assert_eq!(count(&["-o", "rtype.heuristic:FALSE"]), 920);
        assert_eq!(
            count(&["-o", "rtype.heuristic:FALSE", "-o", "rtype.udp_port:0"]),
            0
        );
        // Decode As (both ports) and the port preference take it back.
        let decode_as = ["-o", "rtype.heuristic:FALSE", "-d", "udp.port==41000,rtype"];
        assert_eq!(count(&decode_as), 3202);
        assert_eq!(
            count(&["-o", "rtype.heuristic:FALSE", "-o", "rtype.udp_port:41000"]),
            3202
        );
        let count_in = |name: &str, column: &str, args: &[&str]| {
            tshark(ts, &fixture(name), args)
                .lines()
                .filter(|l| l.contains(column))
                .count()
        };
        let rt = "rt-two-players.pcap";
        assert_eq!(count_in(rt, " RT ", &["-o", "rt.heuristic:FALSE"]), 0);
        let decode_as = ["-o", "rt.heuristic:FALSE", "-d", "udp.port==4242,rt"];
        assert_eq!(count_in(rt, " RT ", &decode_as), 4981);
        let rtnp = "rtnp-solo.pcap";
        assert_eq!(count_in(rtnp, " RTNP ", &["-o", "rtnp.heuristic:FALSE"]), 0);
        assert_eq!(count_in(rtnp, " RTNP ", &[]), 790);
    }
}

/// The rows of one table of `tshark -z rtype,stat` (columns two spaces apart), by its title.
fn stat_rows(out: &str, title: &str) -> Vec<Vec<String>> {
    let mut lines = out.lines().skip_while(|l| *l != title).skip(2);
    let mut rows = Vec::new();
    for line in lines.by_ref() {
        let Some(row) = line.strip_prefix("  ") else {
            break;
        };
        rows.push(
            row.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect(),
        );
    }
    rows
}

/// Statistics → R-Type (`tshark -z rtype,stat`): the conversations, message counts and
/// violations the summary of rtype-inspect lists (its violations of the rules the dissector
/// raises; a reassembled snapshot's findings are the dissector's own).
#[test]
fn statistics_match_the_summary() {
    for ts in tsharks("statistics_match_the_summary") {
        for capture in [
            sample("violations-messages.pcap"),
            sample("old-header.pcap"),
            fixture("rt-two-players.pcap"),
            fixture("rtnp-solo.pcap"),
        ] {
            let out = tshark(ts, &capture, &["-q", "-z", "rtype,stat"]);
            let summary = Command::new(env!("CARGO_BIN_EXE_rtype-inspect"))
                .arg(&capture)
                .args(["--format", "json"])
                .output()
                .unwrap();
            let summary = parse_json(&String::from_utf8_lossy(&summary.stdout));
            let what = format!("{} {}", ts.name(), capture.display());
            let conversations: Vec<Vec<String>> = match summary.get("conversations") {
                Some(J::A(list)) => list
                    .iter()
                    .map(|c| {
                        vec![
                            c.get("id").and_then(J::u64).unwrap().to_string(),
                            c.get("client").and_then(J::str).unwrap().to_string(),
                            c.get("server").and_then(J::str).unwrap().to_string(),
                            c.get("first_frame").and_then(J::u64).unwrap().to_string(),
                        ]
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let shown: Vec<Vec<String>> = stat_rows(&out, "Conversations")
                .into_iter()
                .map(|r| r[..4].to_vec())
                .collect();
            assert_eq!(shown, conversations, "{what}: conversations");
            // Their endpoints: every client once, the servers by address, the same datagrams.
            let datagrams: u64 = stat_rows(&out, "Conversations")
                .iter()
                .map(|r| r[4].parse::<u64>().unwrap())
                .sum();
            let endpoints = stat_rows(&out, "Endpoints");
            for role in ["client", "server"] {
                let sum: u64 = endpoints
                    .iter()
                    .filter(|r| r[1] == role)
                    .map(|r| r[3].parse::<u64>().unwrap())
                    .sum();
                assert_eq!(sum, datagrams, "{what}: the {role} endpoints' datagrams");
            }
            let clients = endpoints.iter().filter(|r| r[1] == "client").count();
            assert_eq!(
                clients,
                conversations.len(),
                "{what}: one client per conversation"
            );
            let arrow = |d: Option<&str>| match d {
                Some("client_to_server") => "C→S",
                Some("server_to_client") => "S→C",
                _ => "?",
            };
            let mut messages: Vec<(String, String, String, String)> = match summary.get("messages")
            {
                Some(J::A(list)) => list
                    .iter()
                    .map(|m| {
                        (
                            m.get("dialect").and_then(J::str).unwrap().to_string(),
                            arrow(m.get("direction").and_then(J::str)).to_string(),
                            m.get("name").and_then(J::str).unwrap().to_string(),
                            m.get("count").and_then(J::u64).unwrap().to_string(),
                        )
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let mut shown: Vec<(String, String, String, String)> = stat_rows(&out, "Messages")
                .into_iter()
                .map(|r| {
                    let n = r.len();
                    (
                        r[0].clone(),
                        r[1].clone(),
                        r[n - 2].clone(),
                        r[n - 1].clone(),
                    )
                })
                .collect();
            messages.sort();
            shown.sort();
            assert_eq!(shown, messages, "{what}: messages");
            let raised: Vec<&str> = dissector_rules().iter().map(|r| r.id()).collect();
            let violations: Vec<(String, String, String)> = match summary.get("violations") {
                Some(J::A(list)) => list
                    .iter()
                    .filter(|v| raised.contains(&v.get("id").and_then(J::str).unwrap()))
                    .map(|v| {
                        (
                            v.get("id").and_then(J::str).unwrap().to_string(),
                            v.get("count").and_then(J::u64).unwrap().to_string(),
                            v.get("first_frame").and_then(J::u64).unwrap().to_string(),
                        )
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let shown: Vec<(String, String, String)> = stat_rows(&out, "Violations")
                .into_iter()
                .map(|r| (r[0].clone(), r[2].clone(), r[3].clone()))
                .collect();
            assert_eq!(shown, violations, "{what}: violations");
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Following an entity
// ------------------------------------------------------------------------------------------------

/// `rtype.entity.id == 68` selects in each tshark the frames rtype-inspect selects on the real
/// 17-byte capture (spawns, destroys, snapshots, chunks and the snapshots they complete), and
/// `-T fields -e rtype.entity.id` lists the same ids of each, in the same order.
#[test]
fn entity_id_field_follows_entity_68_as_rtype_inspect_does() {
    let capture = fixture("reference-17byte-1client.pcap");
    let fields = [
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "rtype.entity.id",
    ];
    let ours = Command::new(env!("CARGO_BIN_EXE_rtype-inspect"))
        .arg("packets")
        .arg(&capture)
        .args(["-Y", "rtype.entity.id == 68"])
        .args(fields)
        .output()
        .unwrap();
    assert!(ours.status.success());
    let ours = String::from_utf8(ours.stdout).unwrap();
    let lines: Vec<&str> = ours.lines().collect();
    assert_eq!(lines.len(), ENTITY_68_FRAMES);
    // Its first spawn, its first update, and the chunk of frame 558: the chunk's own five
    // entities, then the 70 of the snapshot it completes.
    assert_eq!(lines[0], "523\t68");
    assert!(lines[1].starts_with("524\t0,1,"), "{}", lines[1]);
    let chunk = lines.iter().find(|l| l.starts_with("558\t")).unwrap();
    let ids: Vec<u32> = chunk[4..].split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(ids[..5], [65, 66, 67, 68, 69]);
    assert_eq!(ids[5..], (0..70).collect::<Vec<u32>>());
    for ts in tsharks("entity_id_field_follows_entity_68_as_rtype_inspect_does") {
        let mut args = vec!["-Y", "rtype.entity.id == 68"];
        args.extend(fields);
        assert_eq!(tshark(ts, &capture, &args), ours, "{}", ts.name());
    }
}

/// Frames of the 17-byte capture that name entity 68.
const ENTITY_68_FRAMES: usize = 497;

/// The Follow R-Type entity menu: with register_packet_menu (Wireshark 4.4, 4.6) an entry of the
/// packet list per protocol, filtering on the selected packet's first entity; without it (4.0)
/// an Analyze entry asking for the id, which takes a whole id and nothing else; with no GUI
/// (tshark), nothing (every other test runs the dissector there).
#[test]
fn follow_entity_menu_fits_each_wireshark() {
    if !Command::new("lua5.4")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip::missing(
            "follow_entity_menu_fits_each_wireshark",
            "no lua5.4 (apt-get install lua5.4)",
        );
        return;
    }
    let mock = scratch("mock-wireshark-gui.lua");
    std::fs::write(&mock, MOCK_WIRESHARK).unwrap();
    let run = |gui: &str| {
        let out = Command::new("lua5.4")
            .arg("-e")
            .arg(format!("GUI = {gui:?}"))
            .arg(&mock)
            .arg(dissector())
            .arg("none")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        run("packet"),
        "menu: R-Type\n\
         packet menu on rtype.entity.id: R-Type/Follow R-Type entity (rtype.entity.id)\n\
         apply_filter rtype.entity.id == 68\n\
         packet menu on rt.entity.id: R-Type/Follow R-Type entity (rt.entity.id)\n\
         apply_filter rt.entity.id == 10012\n"
    );
    assert_eq!(
        run("menu"),
        "menu: R-Type\n\
         menu: Follow R-Type entity (rtype.entity.id)\n\
         dialog Follow R-Type entity (rtype.entity.id): Entity ID\n\
         apply_filter rtype.entity.id == 68\n\
         menu: Follow R-Type entity (rt.entity.id)\n\
         dialog Follow R-Type entity (rt.entity.id): Entity ID\n\
         apply_filter rt.entity.id == 68\n"
    );
}
