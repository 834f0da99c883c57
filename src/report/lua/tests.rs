//! The generator's tests: what the Lua declares and compiles, read in its text.

use super::*;

/// The number of the field descriptor (`fd(N, ...)`) whose line holds `constructor`.
fn field_number<'a>(lua: &'a str, constructor: &str) -> &'a str {
    lua.lines()
        .find(|l| l.contains(constructor))
        .and_then(|l| l.strip_prefix("fd("))
        .and_then(|l| l.split(',').next())
        .unwrap_or_else(|| panic!("no field descriptor with {constructor}"))
}

#[test]
fn every_runtime_field_has_its_lua_key() {
    let names: Vec<&str> = super::DISSECTOR_RUNTIME.iter().map(|f| f.name).collect();
    let lua: Vec<&str> = super::RUNTIME_LUA.iter().map(|(name, ..)| *name).collect();
    assert_eq!(names, lua);
}

#[test]
fn declares_the_documented_filter_names() {
    let lua = generate(None);
    for name in [
        "rtype.magic",
        "rtype.version",
        "rtype.compressed",
        "rtype.packet_type",
        "rtype.msg_type",
        "rtype.sequence",
        "rtype.tick",
        "rtype.payload_len",
        "rtype.orig_size",
        "rtype.crc",
        "rtype.crc.status",
        "rtype.input.player_id",
        "rtype.snapshot.entity.id",
        "rtype.snapshot.entity.pos_x",
        "rtype.snapshot_chunk.entity.pos_x",
        "rtype.levelinit.archetype.sprite_id",
        "rtype.levelinit.boss.name",
        "rtype.levelevent.set_scroll.keyframe.time",
        "rtype.reassembled.entity.id",
        "rt.magic",
        "rt.packet_type",
        "rt.flags",
        "rt.reliable",
        "rt.sequence_number",
        "rt.connect.player_name",
        "rt.transform_snapshot.entity.pos_x",
        "rt.full_state.component.transform.pos_x",
        "rtnp.type",
        "rtnp.framing",
    ] {
        assert!(lua.contains(&format!("(\"{name}\"")), "{name} not declared");
    }
    let raised = dissector_rules();
    for rule in CATALOG.iter().filter(|r| {
        r.id.starts_with("rtype.") || r.id.starts_with("rt.") || r.id.starts_with("rtnp.")
    }) {
        let declared = lua.contains(&format!(
            "expert_info(\"{}\", \"{}\"",
            proto_of(rule.id),
            rule.id
        ));
        let should = raised.contains(&Rule::from_id(rule.id).unwrap());
        assert_eq!(
            declared, should,
            "{}: expert info declared {declared}, raised {should}",
            rule.id
        );
    }
    // The rules left to rtype-inspect are the ones about conversations, captures and budgets.
    let left: Vec<&str> = CATALOG
        .iter()
        .filter(|r| {
            !["capture.", "session.", "budget."]
                .iter()
                .any(|p| r.id.starts_with(p))
        })
        .filter(|r| !raised.contains(&Rule::from_id(r.id).unwrap()))
        .map(|r| r.id)
        .collect();
    assert_eq!(
        left,
        [
            "rtype.chunk.missing",
            "rt.reliable.unacknowledged",
            "rtnp.message.direction",
            "rtnp.epoch.sequence",
            "rtnp.client-id.mismatch",
            "rtnp.player-name.length",
            "rtnp.client.silent",
        ]
    );
    assert!(!lua.contains("bit32.") && !lua.contains(" // "));
    // The real PLAYER_INPUT's signed aim has the document's filter name.
    assert!(lua.contains("ProtoField.int32(\"rt.input.aim_direction_x\""));
    let shared = field_number(&lua, "ProtoField.int32(\"rt.input.aim_direction_x\"");
    assert!(lua.contains(&format!(
        ", FPF[{shared}], \"aim_direction_x\", nil, nil, nil, true)"
    )));
    assert!(!lua.contains("aim_direction_x_2"));
}

/// Every rule key the hand-written runtime names (`RULE.crc`, `RULE_RT.opaque`, ...) is one
/// its dialect's description declares, as its table is generated from it.
#[test]
fn runtime_rule_keys_are_declared() {
    let runtime = [
        PRELUDE,
        WALKER,
        RECOGNISE,
        DRIVER,
        DRIVER_RT,
        DRIVER_RTNP,
        REGISTER,
    ]
    .concat();
    for (table, rules) in [
        ("RULE.", rtype::DATAGRAM_RULES),
        ("RULE_RT.", rt::DATAGRAM_RULES),
        ("RULE_RTNP.", rtnp::DATAGRAM_RULES),
    ] {
        let keys: Vec<String> = runtime_rules(rules).map(|(key, _)| key).collect();
        let mut named = 0;
        for (at, _) in runtime.match_indices(table) {
            if at > 0 && runtime.as_bytes()[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            let key: String = runtime[at + table.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if key != "profile_suggested" {
                assert!(keys.contains(&key), "{table}{key} is not declared");
                named += 1;
            }
        }
        assert!(named >= 10, "{table}: {named}");
    }
}

/// Every rule the descriptions attach to a field, variant, switch, message or schema is one
/// the dissector registers (its description says one datagram decides it).
#[test]
fn description_rules_are_datagram_rules() {
    let mut rules = BTreeSet::new();
    fn nodes(list: &'static [Node], rules: &mut BTreeSet<Rule>) {
        for node in list {
            match node {
                Node::Field(f) => field(f, rules),
                Node::Repeat { count, item } => {
                    field(count, rules);
                    nodes(item.nodes, rules);
                }
                Node::Switch {
                    tag,
                    cases,
                    unknown,
                } => {
                    field(tag, rules);
                    rules.insert(*unknown);
                    for case in *cases {
                        nodes(case.group.nodes, rules);
                    }
                }
                Node::Masked => {}
            }
        }
    }
    fn field(f: &Field, rules: &mut BTreeSet<Rule>) {
        match f.check {
            Check::None => {}
            Check::Finite(r)
            | Check::Ascending(r)
            | Check::Known(r)
            | Check::Unused { rule: r, .. } => {
                rules.insert(r);
            }
        }
    }
    for m in rtype::MESSAGES.iter().chain(rt::MESSAGES) {
        nodes(m.body, &mut rules);
        for v in m.variants {
            rules.insert(v.rule);
            nodes(v.nodes, &mut rules);
        }
        rules.extend(m.seen_rule);
    }
    fn json(fields: &'static [JsonField], rules: &mut BTreeSet<Rule>) {
        for f in fields {
            rules.insert(f.missing);
            json(f.fields, rules);
        }
    }
    for m in rtnp::MESSAGES {
        rules.extend(m.message.seen_rule);
        json(m.fields, &mut rules);
    }
    let raised = dissector_rules();
    let stray: Vec<&Rule> = rules.iter().filter(|r| !raised.contains(r)).collect();
    assert!(stray.is_empty(), "{stray:?}");
    assert!(rules.contains(&Rule::RtypeEmptyPong) && rules.contains(&Rule::RtnpMissingField));
}

#[test]
fn profile_bits_are_compiled() {
    let profile = Profile::parse(
        "name = \"fixed\"\n[bits]\n1 = { name = \"pos_x\", type = \"i16\", divisor = 10 }\n\
         6 = { name = \"status\", type = \"u8\", flags = { status = 0xF0, lives = 0x0F } }\n\
         10 = { name = \"score\", type = \"i32\" }\n",
    )
    .unwrap();
    let lua = generate(Some(&profile));
    assert!(lua.contains("ProtoField.double(\"rtype.snapshot.entity.pos_x\""));
    assert!(lua.contains("ProtoField.int16(\"rtype.snapshot.entity.pos_x.raw\""));
    assert!(lua.contains(", 10) -- profile fixed"));
    assert!(lua.contains("ProtoField.int32(\"rtype.snapshot.entity.score\""));
    assert!(lua.contains(
        "ProtoField.uint8(\"rtype.snapshot.entity.status.lives\", \"lives\", base.DEC, nil, 0xF)"
    ));
    let score = field_number(&lua, "ProtoField.int32(\"rtype.snapshot.entity.score\"");
    assert!(lua.contains(&format!(
        "if m % 2048 >= 1024 then\n            if I32(c, t, {score}) == nil then return false end"
    )));
    // Every bundled profile is compiled in too, the given one the preference's default.
    assert!(lua.contains("name = \"reference-17byte\""));
    assert!(lua.contains("DEFAULT_PROFILE, CHECK_CRC = {}, 4, true"));
}
