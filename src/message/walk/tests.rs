use super::*;
use crate::datagram::rtype;
use crate::proto::rtype as desc;

/// A visitor that wants every field (so the walk goes node by node) and lists them.
#[derive(Default)]
struct Everything(Vec<(&'static str, usize, usize)>);

impl Visitor for Everything {
    fn field(&mut self, f: &'static Field, at: usize, len: usize, _: Value<'_>) {
        self.0.push((f.name, at, len));
    }
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// A visitor that only wants entity types, as the pipeline's check against LevelInit.
#[derive(Default)]
struct Types(Vec<(usize, Value<'static>)>);

impl Visitor for Types {
    const WANTS_FIELDS: bool = false;
    fn wants(&self, field: &'static Field) -> bool {
        field.role == Role::EntityType
    }
    fn field(&mut self, _: &'static Field, at: usize, _: usize, value: Value<'_>) {
        let value = value.as_u64().map_or(Value::U(u64::MAX), Value::U);
        self.0.push((at, value));
    }
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// A visitor that wants the entity framing only, as the pipeline's lifecycle tap.
#[derive(Default)]
struct Framing(Vec<(&'static str, usize, usize)>);

impl Visitor for Framing {
    const WANTS_FIELDS: bool = false;
    fn wants(&self, field: &'static Field) -> bool {
        matches!(field.role, Role::EntityId | Role::UpdateMask)
    }
    fn field(&mut self, f: &'static Field, at: usize, len: usize, _: Value<'_>) {
        self.0.push((f.name, at, len));
    }
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// A visitor that follows entities and wants no field, as the pipeline's summary.
#[derive(Default)]
struct Followed(Vec<(&'static str, u64, usize)>);

impl Visitor for Followed {
    const WANTS_FIELDS: bool = false;
    const WANTS_ENTITIES: bool = true;
    fn entity(&mut self, id: u32, at: usize) {
        self.0.push(("id", id.into(), at));
    }
    fn entity_type(&mut self, type_id: u64, at: usize) {
        self.0.push(("entity_type", type_id, at));
    }
    fn field(&mut self, _: &'static Field, _: usize, _: usize, _: Value<'_>) {}
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// A visitor that takes masked blocks whole.
#[derive(Default)]
struct Blocks(Vec<(usize, u16, usize, usize)>);

impl Visitor for Blocks {
    const WANTS_FIELDS: bool = false;
    const WANTS_MASKS: bool = true;
    fn wants(&self, _: &'static Field) -> bool {
        false
    }
    fn masked(&mut self, item: usize, mask: u16, at: usize, len: usize) {
        self.0.push((item, mask, at, len));
    }
    fn field(&mut self, _: &'static Field, _: usize, _: usize, _: Value<'_>) {}
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// Each group opened and closed, and each field, in the order visited.
#[derive(Default)]
struct Nesting(Vec<String>);

impl Visitor for Nesting {
    fn field(&mut self, f: &'static Field, at: usize, _: usize, _: Value<'_>) {
        self.0.push(format!("{}@{at}", f.name));
    }
    fn open(&mut self, _: &'static Group, how: Open, at: usize) {
        self.0.push(format!("open {how:?}@{at}"));
    }
    fn close(&mut self, how: Open) {
        self.0.push(format!("close {how:?}"));
    }
    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        self.0.push(format!("undecoded {}@{at}", bytes.len()));
    }
}

fn decode<V: Visitor>(payload: &[u8], visitor: &mut V) -> (Facts, Vec<Finding>) {
    let snapshot = desc::message(desc::SNAPSHOT).unwrap();
    let mut findings = Vec::new();
    let facts = decode_message(
        snapshot,
        payload,
        17,
        rtype::ENDIAN,
        &Profile::document(),
        &rtype::MESSAGE_RULES,
        visitor,
        &mut findings,
    );
    (facts, findings)
}

/// An entity type that is not a whole number as the profile lays it out (signed and
/// negative, or divided) is followed as the node-by-node walk reads it: a type only when its
/// value is a whole number.
#[test]
fn entity_types_are_followed_as_their_profile_reads_them() {
    let snapshot = desc::message(desc::SNAPSHOT).unwrap();
    // Two entities with bit 0 (the type) and bit 9 (lives, one byte) set.
    let mut payload = vec![0, 2];
    for (id, ty) in [(7u32, [0xFF, 0xFE]), (8, [0x00, 0x14])] {
        payload.extend(id.to_be_bytes());
        payload.extend(0x0201u16.to_be_bytes());
        payload.extend(ty);
        payload.push(3);
    }
    let (one, two) = (("id", 7, 2), ("id", 8, 11));
    for (ty, divisor, expected) in [
        (
            "u16",
            1,
            vec![one, ("entity_type", 65534, 8), two, ("entity_type", 20, 17)],
        ),
        ("i16", 1, vec![one, two, ("entity_type", 20, 17)]),
        ("u16", 10, vec![one, two]),
        ("i16", 10, vec![one, two]),
    ] {
        let profile = Profile::parse(&format!(
            "name = \"t\"\n[bits]\n0 = {{ name = \"entity_type\", type = \"{ty}\", divisor = {divisor} }}\n"
        ))
        .unwrap();
        let mut followed = Followed::default();
        let mut findings = Vec::new();
        decode_message(
            snapshot,
            &payload,
            0,
            rtype::ENDIAN,
            &profile,
            &rtype::MESSAGE_RULES,
            &mut followed,
            &mut findings,
        );
        assert_eq!(findings, []);
        assert_eq!(followed.0, expected, "{ty} / {divisor}");
    }
}

/// A snapshot's items, read in one go for a visitor that sees the fields (export, the tree),
/// open and close around their own fields, on every cut of the payload: whatever stops the
/// walk, each item opened is closed before its list.
#[test]
fn items_open_and_close_around_their_fields_on_every_cut() {
    let mut payload = vec![0, 3];
    for (id, mask, body) in [(1u32, 0x0003u16, 5usize), (2, 0x0000, 0), (3, 0x0080, 3)] {
        payload.extend(id.to_be_bytes());
        payload.extend(mask.to_be_bytes());
        payload.extend((0..body).map(|i| i as u8));
    }
    let mut whole = Nesting::default();
    decode(&payload, &mut whole);
    assert_eq!(
        whole.0,
        [
            "entity_count@0",
            "open List { count: 3 }@2",
            "open Item { index: 0 }@2",
            "id@2",
            "update_mask@6",
            "entity_type@8",
            "pos_x@9",
            "close Item { index: 0 }",
            "open Item { index: 1 }@13",
            "id@13",
            "update_mask@17",
            "close Item { index: 1 }",
            "open Item { index: 2 }@19",
            "id@19",
            "update_mask@23",
            "undecoded 3@25",
            "close Item { index: 2 }",
            "close List { count: 3 }",
        ]
    );
    let all_fields: Vec<&String> = whole.0.iter().filter(|e| !e.contains(' ')).collect();
    for len in 0..=payload.len() {
        let mut nesting = Nesting::default();
        decode(&payload[..len], &mut nesting);
        let mut open = Vec::new();
        for event in &nesting.0 {
            if let Some(group) = event.strip_prefix("open ") {
                open.push(group.split('@').next().unwrap_or_default().to_string());
            } else if let Some(group) = event.strip_prefix("close ") {
                assert_eq!(open.pop().as_deref(), Some(group), "cut at {len}");
            }
        }
        assert_eq!(open, Vec::<String>::new(), "cut at {len}");
        // The fields visited are the whole payload's, up to the cut.
        let fields: Vec<&String> = nesting.0.iter().filter(|e| !e.contains(' ')).collect();
        assert_eq!(fields, all_fields[..fields.len()], "cut at {len}");
    }
}

/// The walk that steps over a summary's unwanted fields finds exactly what the node-by-node
/// walk finds, on every cut of a snapshot whose entities use skippable, read, reserved and
/// undefined mask bits.
#[test]
fn skipping_finds_what_reading_finds() {
    let mut payload = vec![0, 4];
    for (id, mask, body) in [
        (1u32, 0x027Fu16, 21usize), // type, 4 floats, health, status, lives
        (2, 0x001E, 16),            // 4 floats, no type
        (3, 0x0000, 0),
        (4, 0x0080, 3), // reserved bit 7: the rest is undecodable
    ] {
        payload.extend(id.to_be_bytes());
        payload.extend(mask.to_be_bytes());
        payload.extend((0..body).map(|i| i as u8));
    }
    for len in 0..=payload.len() {
        let cut = &payload[..len];
        let skipped = decode(cut, &mut NoFields);
        assert_eq!(
            skipped,
            decode(cut, &mut Everything::default()),
            "cut at {len}"
        );
        assert_eq!(skipped, decode(cut, &mut Types::default()), "cut at {len}");
        // The framing is visited where it is, whichever walk reads it.
        let (mut framing, mut every) = (Framing::default(), Everything::default());
        assert_eq!(skipped, decode(cut, &mut framing), "cut at {len}");
        decode(cut, &mut every);
        every.0.retain(|f| matches!(f.0, "id" | "update_mask"));
        assert_eq!(framing.0, every.0, "cut at {len}");
        // Entities are followed where they are, whichever walk reads them.
        let mut followed = Followed::default();
        assert_eq!(skipped, decode(cut, &mut followed), "cut at {len}");
        let mut every = Everything::default();
        decode(cut, &mut every);
        let named: Vec<(&str, usize)> = every
            .0
            .iter()
            .filter(|f| matches!(f.0, "id" | "entity_type"))
            .map(|f| (f.0, f.1))
            .collect();
        let seen: Vec<(&str, usize)> = followed.0.iter().map(|f| (f.0, f.2)).collect();
        assert_eq!(seen, named, "cut at {len}");
    }
    // Fields are visited at their offsets, whichever way the walk reads them.
    let mut every = Everything::default();
    decode(&payload, &mut every);
    let names: Vec<&str> = every.0.iter().map(|f| f.0).collect();
    assert_eq!(
        names[..12],
        [
            "entity_count",
            "id",
            "update_mask",
            "entity_type",
            "pos_x",
            "pos_y",
            "vel_x",
            "vel_y",
            "health",
            "status_flags",
            "lives",
            "id"
        ]
    );
    assert_eq!(every.0[3], ("entity_type", 8, 1));
    assert_eq!(every.0[10], ("lives", 28, 1));
    // Blocks read in one go are handed over whole; the one with a reserved bit is not.
    let mut blocks = Blocks::default();
    assert_eq!(
        decode(&payload, &mut blocks),
        decode(&payload, &mut NoFields)
    );
    assert_eq!(
        blocks.0,
        [(2, 0x027F, 8, 21), (29, 0x001E, 35, 16), (51, 0, 57, 0)]
    );
    let mut followed = Followed::default();
    decode(&payload, &mut followed);
    assert_eq!(
        followed.0,
        [
            ("id", 1, 2),
            ("entity_type", 0, 8),
            ("id", 2, 29),
            ("id", 3, 51),
            ("id", 4, 57)
        ]
    );
    let mut types = Types::default();
    decode(&payload, &mut types);
    assert_eq!(types.0, [(8, Value::U(0))]);
    let (facts, findings) = decode(&payload, &mut NoFields);
    assert_eq!(facts.entity_count, Some(4));
    let rules: Vec<Rule> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [Rule::RtypeReservedBit]);
    assert_eq!(
        findings[0].detail,
        Detail::MaskBit {
            entity: 4,
            bit: 7,
            left: 3
        }
    );
}

#[test]
fn any_rt_payload_of_any_type_decodes_without_panic() {
    use crate::message::{decode_message, NoFields};
    use crate::proto::rt::{HEADER_LEN, MESSAGES, MESSAGE_RULES};
    let profile = crate::proto::profile::Profile::document();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as u8
    };
    for m in MESSAGES {
        for len in 0..96 {
            let payload: Vec<u8> = (0..len).map(|_| next()).collect();
            for endian in [Endian::Big, Endian::Little] {
                let mut findings = vec![];
                decode_message(
                    m,
                    &payload,
                    HEADER_LEN,
                    endian,
                    &profile,
                    &MESSAGE_RULES,
                    &mut NoFields,
                    &mut findings,
                );
                assert!(
                    findings.iter().all(|f| f.at as usize <= HEADER_LEN + len),
                    "{}",
                    m.name
                );
            }
        }
    }
}
