//! The field registry names every field as the generated dissector does: for the document's
//! snapshot table and each bundled profile, the ProtoFields the Lua registers are exactly the
//! registry's dissector fields, with the same types, and every expert info the Lua registers is
//! a rule field of the registry.

#[path = "support/skip.rs"]
mod skip;

use std::collections::BTreeMap;

use rtype_inspect::datagram::Dialect;
use rtype_inspect::proto::profile::{Profile, BUNDLED};
use rtype_inspect::proto::registry::{FieldType, Provider, Registry, Source};
use rtype_inspect::report::lua::generate;

/// Every `ProtoField.<ctor>("<name>"` of the Lua text with snapshot profile `profile` (the lines
/// of the other profiles' own fields, marked `-- profile NAMES`, left out): name → Wireshark type.
fn proto_fields(lua: &str, profile: &str) -> BTreeMap<String, &'static str> {
    let mut fields = BTreeMap::new();
    let lines = lua.lines().filter(|line| {
        line.split_once(" -- profile ")
            .is_none_or(|(_, names)| names.split(' ').any(|n| n == profile))
    });
    for part in lines.flat_map(|line| line.split("ProtoField.").skip(1)) {
        let Some((ctor, rest)) = part.split_once("(\"") else {
            continue;
        };
        let Some((name, _)) = rest.split_once('"') else {
            continue;
        };
        let ft = match ctor {
            "uint8" => "FT_UINT8",
            "uint16" => "FT_UINT16",
            "uint32" => "FT_UINT32",
            "int16" => "FT_INT16",
            "int32" => "FT_INT32",
            "float" => "FT_FLOAT",
            "double" => "FT_DOUBLE",
            "string" => "FT_STRING",
            "bytes" => "FT_BYTES",
            "bool" => "FT_BOOLEAN",
            "framenum" => "FT_FRAMENUM",
            "relative_time" => "FT_RELATIVE_TIME",
            other => panic!("unexpected ProtoField.{other} for {name}"),
        };
        assert!(
            fields.insert(name.to_string(), ft).is_none(),
            "{name} registered twice"
        );
    }
    fields
}

fn registry_fields(registry: &Registry) -> BTreeMap<String, &'static str> {
    Dialect::ALL
        .iter()
        .flat_map(|p| registry.dissector_fields(*p))
        .map(|f| (f.name.clone(), f.ty.ft_name()))
        .collect()
}

#[test]
fn registry_names_every_protofield_of_the_dissector() {
    let mut profiles = vec![Profile::document()];
    profiles.extend(
        BUNDLED
            .iter()
            .map(|(name, _)| Profile::bundled(name).unwrap()),
    );
    for profile in &profiles {
        let lua = generate(Some(profile));
        let registry = Registry::new(profile);
        let lua_fields = proto_fields(&lua, &profile.name);
        let ours = registry_fields(&registry);
        let missing: Vec<_> = lua_fields
            .keys()
            .filter(|n| !ours.contains_key(*n))
            .collect();
        let extra: Vec<_> = ours
            .keys()
            .filter(|n| !lua_fields.contains_key(*n))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "profile {}: the dissector registers {missing:?} that the registry lacks, the registry has {extra:?} that the dissector lacks",
            profile.name
        );
        for (name, ft) in &lua_fields {
            assert_eq!(ours[name], *ft, "profile {}: type of {name}", profile.name);
        }
        assert!(lua_fields.len() > 400, "{}", lua_fields.len());
        // Every expert info the dissector registers is a rule field (or its own failure).
        for part in lua.split("expert_info(\"").skip(1) {
            let id = part.split('"').nth(2).unwrap();
            // Its own failure, and its note suggesting a profile (not a rule).
            if id.ends_with(".malformed") || id == "rtype.profile.suggested" {
                continue;
            }
            let field = registry.field(registry.get(id).unwrap_or_else(|| panic!("{id}")));
            assert!(matches!(field.source, Source::Rule(_)), "{id}");
            assert_eq!(field.provider, Provider::Dissector, "{id}");
            assert_eq!(field.ty, FieldType::None);
        }
    }
}

#[test]
fn protocol_reference_names_registered_fields() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md")).unwrap();
    let registry = Registry::new(&Profile::document());
    let mut checked = 0;
    for name in doc.split('`').skip(1).step_by(2) {
        let dialect = ["rtype.", "rt.", "rtnp."]
            .iter()
            .any(|p| name.starts_with(p));
        if !dialect || name.contains('…') || name.contains(' ') {
            continue;
        }
        assert!(
            registry.get(name).is_some(),
            "docs/protocol.md names {name}"
        );
        checked += 1;
    }
    assert!(checked > 400, "{checked}");
}

/// The fields Wireshark itself provides are listed by `rtype-inspect fields` as `tshark -G fields`
/// lists them: the same kind (protocol or field), label and type, so that a filter written for
/// one means the same in the other.
#[test]
fn wiresharks_own_fields_are_listed_as_tshark_lists_them() {
    let Ok(tshark) = std::process::Command::new("tshark")
        .args(["-G", "fields"])
        .output()
    else {
        skip::missing(
            "wiresharks_own_fields_are_listed_as_tshark_lists_them",
            "tshark is not on PATH (apt-get install tshark)",
        );
        return;
    };
    let ours = std::process::Command::new(env!("CARGO_BIN_EXE_rtype-inspect"))
        .arg("fields")
        .output()
        .unwrap();
    // name -> (kind, label, type): a protocol row has no type.
    let rows = |text: &[u8]| -> BTreeMap<String, (String, String, String)> {
        String::from_utf8_lossy(text)
            .lines()
            .filter_map(|line| {
                let cols: Vec<&str> = line.split('\t').collect();
                let ty = if cols[0] == "F" { cols.get(3)? } else { "" };
                Some((
                    cols.get(2)?.to_string(),
                    (cols[0].into(), cols[1].into(), ty.into()),
                ))
            })
            .collect()
    };
    let (ours, theirs) = (rows(&ours.stdout), rows(&tshark.stdout));
    let wireshark: Vec<&String> = ours
        .keys()
        .filter(|name| {
            let protocol = name.split('.').next().unwrap_or_default();
            ["frame", "ip", "ipv6", "udp", "_ws"].contains(&protocol)
        })
        .collect();
    assert_eq!(wireshark.len(), 22, "{wireshark:?}");
    for name in wireshark {
        assert_eq!(ours.get(name), theirs.get(name), "{name}");
    }
}
