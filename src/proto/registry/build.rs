//! The registry's builder: walks the description in the dissector generator's order and names
//! every described field by its rules (flag bits, raw integers, shared and numbered names), with
//! its Parquet column.

use std::collections::{HashMap, HashSet};

use super::*;

/// The rows a field is declared in, while the builder walks the description.
#[derive(Clone, Debug)]
struct Row {
    table: String,
    /// The filter names' prefix that the column names drop, with its dot.
    prefix: String,
    /// Put before the column name (`header_`).
    column_prefix: &'static str,
    depth: usize,
}

impl Row {
    fn of_scope(scope: Scope, prefix: &str) -> Row {
        Row {
            table: scope_table(scope).into(),
            prefix: format!("{prefix}."),
            column_prefix: if matches!(scope, Scope::Header(_)) {
                "header_"
            } else {
                ""
            },
            depth: 0,
        }
    }

    fn column(&self, name: &str) -> Column {
        let rest = name.strip_prefix(&self.prefix).unwrap_or(name);
        Column {
            table: self.table.clone(),
            name: format!("{}{}", self.column_prefix, rest.replace('.', "_")),
            row_depth: self.depth,
        }
    }
}

/// Builds the registry by walking the description in the dissector generator's order, naming
/// fields by its rules.
pub(super) struct Builder<'p> {
    /// The snapshot layouts whose masked fields are declared, the first's by name first.
    layouts: &'p [Profile],
    fields: Vec<FilterField>,
    index: HashMap<String, usize>,
    /// Names taken: the runtime's, the protocols', the rules' and every field's.
    used: HashSet<String>,
    /// The signature (the declaration's `Debug`) each described name was declared with, and the
    /// extra keys of fields sharing a name.
    signatures: HashMap<String, String>,
    /// Described fields another of the same name and another integer type may share.
    shareable: HashMap<String, &'static Field>,
    /// The rows the fields being declared go to.
    row: Row,
    /// The described fields of each role of [`ROLE_FIELDS`], with their protocol.
    roles: Vec<(Dialect, Role, usize)>,
}

impl<'p> Builder<'p> {
    /// A described dialect's fields, named as its description's field registry names them (the
    /// one naming algorithm of `describe::names`), read by the pipeline's interpreter.
    pub(super) fn described_dialect(
        &mut self,
        index: u8,
        loaded: &crate::describe::loaded::Loaded,
    ) {
        use crate::describe::model::Kind;
        use crate::describe::names;
        let dialect = Dialect::Described(index);
        for (i, f) in loaded.described.names.fields.iter().enumerate() {
            let (ty, runtime) = match i {
                names::PROTOCOL => (FieldType::Protocol, Runtime::Protocol(dialect)),
                names::MESSAGE => (FieldType::String, Runtime::DescribedMessage(index)),
                names::VIOLATION => (FieldType::String, Runtime::Violation(dialect)),
                _ => {
                    let ty = match (f.kind, f.divisor) {
                        (Kind::Int { .. } | Kind::Bits { .. }, Some(_)) => FieldType::Double,
                        (
                            Kind::Int {
                                width,
                                signed: false,
                            },
                            _,
                        ) => FieldType::Unsigned(width * 8),
                        (
                            Kind::Int {
                                width,
                                signed: true,
                            },
                            _,
                        ) => FieldType::Signed(width * 8),
                        (Kind::Bits { width }, _) => {
                            FieldType::Unsigned(width.next_power_of_two().max(8))
                        }
                        (Kind::Float { width: 4 }, _) => FieldType::Float,
                        (Kind::Float { .. }, _) => FieldType::Double,
                        (Kind::Str | Kind::Strz, _) => FieldType::String,
                        (Kind::Bytes, _) => FieldType::Bytes,
                        (Kind::User(_), _) => FieldType::None,
                    };
                    (ty, Runtime::DescribedField(index, i as u16))
                }
            };
            let values = f
                .enumeration
                .and_then(|e| loaded.enum_names.get(e))
                .map_or(Values::None, |n| Values::Named(n));
            self.push(FilterField {
                column: None,
                name: f.name.clone(),
                label: f.label.clone(),
                ty,
                hex: false,
                values,
                source: Source::Runtime(runtime),
                provider: Provider::Dissector,
            });
        }
    }

    pub(super) fn new(layouts: &'p [Profile]) -> Self {
        let mut used: HashSet<String> = DISSECTOR_RUNTIME
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        used.extend(Dialect::ALL.iter().map(|p| p.name().to_string()));
        used.extend(CATALOG.iter().map(|r| r.id.to_string()));
        used.extend(MALFORMED.iter().map(|id| id.to_string()));
        for p in Dialect::ALL {
            used.extend(ROLE_FIELDS.iter().map(|r| role_field_name(p, r)));
        }
        Builder {
            layouts,
            fields: Vec::new(),
            index: HashMap::new(),
            used,
            signatures: HashMap::new(),
            shareable: HashMap::new(),
            row: Row::of_scope(Scope::Reassembled, ""),
            roles: Vec::new(),
        }
    }

    /// The fields of [`ROLE_FIELDS`], for each protocol whose described fields have the role.
    pub(super) fn role_fields(&mut self) {
        for p in Dialect::ALL {
            for r in ROLE_FIELDS {
                let of: Vec<usize> = self
                    .roles
                    .iter()
                    .filter(|(q, role, _)| *q == p && *role == r.role)
                    .map(|x| x.2)
                    .collect();
                if of.is_empty() {
                    continue;
                }
                let ty = self.fields[of[0]].ty;
                self.push(FilterField {
                    column: None,
                    name: role_field_name(p, r),
                    label: r.label.into(),
                    ty,
                    hex: false,
                    values: Values::None,
                    source: Source::Role { role: r.role, of },
                    provider: Provider::Dissector,
                });
            }
        }
    }

    pub(super) fn push(&mut self, field: FilterField) -> usize {
        let id = self.fields.len();
        self.index.insert(field.name.clone(), id);
        self.fields.push(field);
        id
    }

    pub(super) fn finish(self) -> Registry {
        Registry {
            fields: self.fields,
            index: self.index,
        }
    }

    /// Every field of the description, in the generator's order: the headers, rtype's messages
    /// (body, then variants), the reassembled snapshot, rt's messages.
    pub(super) fn described(&mut self) {
        for nodes in [rtype::HEADER, rtype::HEADER_15] {
            self.header(nodes, Dialect::Rtype);
        }
        self.header(rt::HEADER, Dialect::Rt);
        self.messages(Dialect::Rtype, rtype::MESSAGES);
        let snapshot = snapshot_message();
        let mut path = Vec::new();
        self.row = Row::of_scope(Scope::Reassembled, "rtype.reassembled");
        self.nodes(
            snapshot.body,
            "rtype.reassembled",
            Scope::Reassembled,
            &mut path,
        );
        self.messages(Dialect::Rt, rt::MESSAGES);
    }

    fn header(&mut self, nodes: &'static [Node], protocol: Dialect) {
        self.row = Row::of_scope(Scope::Header(protocol), protocol.name());
        for node in nodes {
            if let Node::Field(f) = node {
                let abbrev = format!("{}.{}", protocol.name(), f.name);
                self.declare(abbrev, f, protocol.name(), Scope::Header(protocol), &[]);
            }
        }
    }

    fn messages(&mut self, protocol: Dialect, messages: &'static [Message]) {
        for m in messages {
            let prefix = format!("{}.{}", protocol.name(), m.short);
            let scope = Scope::Message(protocol, m.code);
            // A message's own table drops the message from its columns' names; its protocol's
            // table keeps it (`input_pos_x`).
            let own = OWN_TABLES.iter().any(|(s, _)| *s == scope);
            self.row = Row::of_scope(scope, if own { &prefix } else { protocol.name() });
            let mut path = Vec::new();
            self.nodes(m.body, &prefix, scope, &mut path);
            for v in m.variants {
                if v.extends_body {
                    self.nodes(m.body, &prefix, scope, &mut path);
                }
                self.nodes(v.nodes, &prefix, scope, &mut path);
            }
        }
    }

    fn nodes(
        &mut self,
        nodes: &'static [Node],
        prefix: &str,
        scope: Scope,
        path: &mut Vec<&'static str>,
    ) {
        for node in nodes {
            match node {
                Node::Field(f) => {
                    self.declare(format!("{prefix}.{}", f.name), f, "", scope, path);
                }
                Node::Repeat { count, item } => {
                    self.declare(format!("{prefix}.{}", count.name), count, "", scope, path);
                    path.push(item.filter);
                    let items = format!("{prefix}.{}", item.filter);
                    let outer = std::mem::replace(
                        &mut self.row,
                        Row {
                            table: items_table(scope, item),
                            prefix: format!("{items}."),
                            column_prefix: "",
                            depth: path.len(),
                        },
                    );
                    self.nodes(item.nodes, &items, scope, path);
                    self.row = outer;
                    path.pop();
                }
                Node::Switch { tag, cases, .. } => {
                    self.declare(format!("{prefix}.{}", tag.name), tag, "", scope, path);
                    for case in *cases {
                        path.push(case.group.filter);
                        let inner = format!("{prefix}.{}", case.group.filter);
                        self.nodes(case.group.nodes, &inner, scope, path);
                        path.pop();
                    }
                }
                Node::Masked => {
                    for (i, layout) in self.layouts.iter().enumerate() {
                        for bit in 0..MASK_BITS {
                            let BitSlot::Field(f) = layout.bits()[bit] else {
                                continue;
                            };
                            let abbrev = format!("{prefix}.{}", f.name);
                            if i > 0 && self.also_declares(&abbrev, f) {
                                continue;
                            }
                            self.declare(abbrev, f, "", scope, path);
                        }
                    }
                }
            }
        }
    }

    /// Declares `f` under `abbrev` as the generator does (once; another field wanting the same
    /// name gets a numbered one, unless it may share it), with its raw value and flag bits.
    fn declare(
        &mut self,
        abbrev: String,
        f: &'static Field,
        bits_prefix: &str,
        scope: Scope,
        path: &[&'static str],
    ) {
        let signature = format!("{f:?}");
        if self.share(&abbrev, f, &signature) {
            return;
        }
        let mut name = abbrev.clone();
        let mut n = 1;
        loop {
            match self.signatures.get(&name) {
                Some(sig) if *sig == signature => {
                    // The same field again (a variant repeating the body): one more declaration.
                    let id = self.index[&name];
                    if let Source::Described { decls, .. } = &mut self.fields[id].source {
                        if !decls.iter().any(|d| std::ptr::eq(*d, f)) {
                            decls.push(f);
                        }
                    }
                    return;
                }
                None if !self.used.contains(&name) => break,
                _ => {
                    n += 1;
                    name = format!("{abbrev}_{n}");
                }
            }
        }
        self.signatures.insert(name.clone(), signature);
        self.used.insert(name.clone());

        let signed = matches!(f.ty, Ty::I16 | Ty::I32);
        let unsigned = matches!(f.ty, Ty::U8 | Ty::U16 | Ty::U32);
        let hex = matches!(
            f.display,
            Display::Hex | Display::Flags(_) | Display::MessageType
        ) && !signed;
        let array = f.array > 0;
        let text_array = array && matches!(f.display, Display::Text);
        let scaled = !array && f.divisor != 1 && f.ty != Ty::F32 && f.ty != Ty::Str8;
        let ty = match f.ty {
            _ if text_array => FieldType::String,
            _ if array => FieldType::Bytes,
            Ty::F32 => FieldType::Float,
            Ty::Str8 => FieldType::String,
            _ if scaled => FieldType::Double,
            ty => integer_type(ty),
        };
        let values = match (ty.is_integer(), f.display) {
            (true, Display::Enum(named)) => Values::Named(named),
            (true, Display::MessageType) => Values::MessageTypes,
            _ => Values::None,
        };
        let id = self.push(FilterField {
            column: Some(self.row.column(&name)),
            name: name.clone(),
            label: f.label.into(),
            ty,
            hex: hex && !scaled,
            values,
            source: Source::Described {
                scope,
                path: path.to_vec(),
                decls: vec![f],
            },
            provider: Provider::Dissector,
        });
        if f.role != Role::None && ROLE_FIELDS.iter().any(|r| r.role == f.role) {
            self.roles.push((scope.protocol(), f.role, id));
        }
        if scaled {
            let raw = self.unique(format!("{name}.raw"));
            self.push(FilterField {
                column: None,
                name: raw,
                label: format!("{} (raw)", f.label),
                ty: integer_type(f.ty),
                hex,
                values: Values::None,
                source: Source::Raw { of: id },
                provider: Provider::Dissector,
            });
        }
        let plain_unsigned = unsigned && !scaled && !array;
        if let (Display::Flags(named), true) = (f.display, plain_unsigned) {
            let parent = if bits_prefix.is_empty() {
                name.clone()
            } else {
                bits_prefix.to_string()
            };
            for flag in flags_of(named, f.ty) {
                let bit_name = self.unique(format!("{parent}.{}", flag.name));
                let ty = if flag.value.count_ones() == 1 {
                    FieldType::Boolean
                } else {
                    integer_type(f.ty)
                };
                self.push(FilterField {
                    column: None,
                    name: bit_name,
                    label: flag.name.into(),
                    ty,
                    hex: false,
                    values: Values::None,
                    source: Source::Bits {
                        of: id,
                        mask: flag.value,
                    },
                    provider: Provider::Dissector,
                });
            }
        }
        if shareable(f) {
            self.shareable.insert(name, f);
        }
    }

    /// A field of a variant with the name of another field of the same message that only
    /// differs from it by its integer type: both are one signed 32-bit field (the generator's
    /// `share`). Returns whether `f` was such a field.
    fn share(&mut self, abbrev: &str, f: &'static Field, signature: &str) -> bool {
        if !self.shareable.contains_key(abbrev)
            || !shareable(f)
            || self.signatures.get(abbrev).is_some_and(|s| s == signature)
        {
            return false;
        }
        let mut n = 2;
        let key = loop {
            let key = format!("{abbrev}#{n}");
            match self.signatures.get(&key) {
                Some(s) if s == signature => return true,
                Some(_) => n += 1,
                None => break key,
            }
        };
        self.signatures.insert(key, signature.to_string());
        let id = self.index[abbrev];
        let shared = &mut self.fields[id];
        shared.ty = FieldType::Signed(32);
        if let Source::Described { decls, .. } = &mut shared.source {
            decls.push(f);
        }
        true
    }

    /// Adds `f` (another layout's masked field) to the declarations of the field already named
    /// `abbrev`, if there is one.
    fn also_declares(&mut self, abbrev: &str, f: &'static Field) -> bool {
        let Some(&id) = self.index.get(abbrev) else {
            return false;
        };
        if let Source::Described { decls, .. } = &mut self.fields[id].source {
            if !decls.iter().any(|d| std::ptr::eq(*d, f)) {
                decls.push(f);
            }
        }
        true
    }

    /// A name nobody has taken yet, based on `abbrev`.
    fn unique(&mut self, abbrev: String) -> String {
        let mut name = abbrev.clone();
        let mut n = 1;
        while self.used.contains(&name) {
            n += 1;
            name = format!("{abbrev}_{n}");
        }
        self.used.insert(name.clone());
        name
    }
}

fn integer_type(ty: Ty) -> FieldType {
    match ty {
        Ty::U8 => FieldType::Unsigned(8),
        Ty::U16 => FieldType::Unsigned(16),
        Ty::U32 => FieldType::Unsigned(32),
        Ty::I16 => FieldType::Signed(16),
        Ty::I32 => FieldType::Signed(32),
        Ty::F32 | Ty::Str8 => unreachable!("not an integer type"),
    }
}
