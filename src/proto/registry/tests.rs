use super::*;

#[test]
fn names_and_types_follow_the_dissector() {
    let r = Registry::new(&Profile::document());
    let ty = |name: &str| r.field(r.get(name).unwrap()).ty;
    assert_eq!(ty("rtype.msg_type"), FieldType::Unsigned(8));
    assert_eq!(ty("rtype.compressed"), FieldType::Boolean);
    assert_eq!(ty("rtype.version"), FieldType::Unsigned(8));
    assert_eq!(ty("rtype.snapshot.entity.pos_x"), FieldType::Float);
    assert_eq!(ty("rt.input.aim_direction_x"), FieldType::Signed(32));
    assert_eq!(ty("rt.connect.player_name"), FieldType::String);
    assert_eq!(
        ty("rt.animation_snapshot.entity.animation_data"),
        FieldType::Bytes
    );
    assert_eq!(ty("rtype.crc.mismatch"), FieldType::None);
    assert_eq!(ty("frame.time_relative"), FieldType::RelativeTime);
    let msg = r.field(r.get("rtype.msg_type").unwrap());
    assert_eq!(msg.values.value_of("server_snapshot"), Some(0x14));
    assert!(r.get("rtype.snapshot.entitiy.id").is_none());
    assert_eq!(
        r.nearest("rtype.snapshot.entitiy.id", 1),
        ["rtype.snapshot.entity.id"]
    );
    // Both layouts of PLAYER_INPUT's aim read into the one field.
    let Source::Described { decls, .. } =
        &r.field(r.get("rt.input.aim_direction_x").unwrap()).source
    else {
        panic!()
    };
    assert_eq!(decls.len(), 2);
    // Every entity id of a protocol, under one name.
    let id = r.get("rtype.entity.id").unwrap();
    let Source::Role { role, of } = &r.field(id).source else {
        panic!()
    };
    assert_eq!(*role, Role::EntityId);
    let names: Vec<&str> = of.iter().map(|&f| r.field(f).name.as_str()).collect();
    assert_eq!(
        names,
        [
            "rtype.snapshot.entity.id",
            "rtype.entity_spawn.entity_id",
            "rtype.entity_destroyed.entity_id",
            "rtype.snapshot_chunk.entity.id",
            "rtype.reassembled.entity.id"
        ]
    );
    assert_eq!(r.field(id).ty, FieldType::Unsigned(32));
    let Source::Role { of, .. } = &r.field(r.get("rt.entity.id").unwrap()).source else {
        panic!()
    };
    assert!(of.len() > 10, "{}", of.len());
    assert!(r.get("rtnp.entity.id").is_none());
    let scaled = Registry::new(&Profile::bundled("reference-17byte").unwrap());
    let pos_x = scaled.get("rtype.snapshot.entity.pos_x").unwrap();
    assert_eq!(scaled.field(pos_x).ty, FieldType::Double);
    let raw = scaled.get("rtype.snapshot.entity.pos_x.raw").unwrap();
    assert!(matches!(scaled.field(raw).source, Source::Raw { of } if of == pos_x));
}
