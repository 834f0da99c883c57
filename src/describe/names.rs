//! The field registry of a described dialect: every display-filter field, named once, by one
//! algorithm (`<dialect>.header.<field>`, `<dialect>.<message>.<field>…`, a user type's fields
//! under the field that holds it). The decoder, `dialect fields`, the JSON output and the Lua
//! generator all take names from here, through the same [`Layout`] tree.

use super::model::{Description, Field, Kind};

/// The most filter fields one description may define (a type used in many places counts once
/// per place).
pub const MAX_FIELDS: usize = 10_000;

/// One filter field.
#[derive(Clone, Debug)]
pub struct FilterField {
    pub name: String,
    pub label: String,
    pub doc: String,
    pub kind: Kind,
    pub enumeration: Option<usize>,
    pub divisor: Option<f64>,
    /// The field repeats (`repeat`): JSON gives it as a list, always.
    pub repeated: bool,
    pub role: Option<super::model::FieldRole>,
}

/// Where each field of a sequence is registered; a user type's fields have their own layout.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub slots: Vec<Slot>,
}

#[derive(Clone, Debug)]
pub struct Slot {
    pub field: usize,
    pub inner: Option<Layout>,
}

#[derive(Clone, Debug)]
pub struct Names {
    /// The protocol itself (`bydo`), then `<id>.message` (the message's name) and
    /// `<id>.violation` (each broken rule's ID), then the header, the footer and each message.
    pub fields: Vec<FilterField>,
    pub header: Layout,
    pub footer: Layout,
    /// One per message, in the description's order.
    pub messages: Vec<Layout>,
}

/// Index of the protocol's own fields in [`Names::fields`].
pub const PROTOCOL: usize = 0;
pub const MESSAGE: usize = 1;
pub const VIOLATION: usize = 2;

impl Names {
    /// Registers every field of `d`; too many is an error (a type fanned out too wide).
    pub fn new(d: &Description) -> Result<Names, String> {
        let special = |name: String, label: &str| FilterField {
            name,
            label: label.to_string(),
            doc: String::new(),
            kind: Kind::Str,
            enumeration: None,
            divisor: None,
            repeated: false,
            role: None,
        };
        let mut fields = vec![
            special(
                d.id.clone(),
                if d.title.is_empty() { &d.id } else { &d.title },
            ),
            special(format!("{}.message", d.id), "Message"),
            special(format!("{}.violation", d.id), "Violation"),
        ];
        let header = layout(d, &d.header, &format!("{}.header", d.id), &mut fields, 0)?;
        let footer = layout(d, &d.footer, &format!("{}.footer", d.id), &mut fields, 0)?;
        let mut messages = Vec::new();
        for m in &d.messages {
            messages.push(layout(
                d,
                &m.seq,
                &format!("{}.{}", d.id, m.id),
                &mut fields,
                0,
            )?);
        }
        Ok(Names {
            fields,
            header,
            footer,
            messages,
        })
    }

    /// The index of the field named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

fn layout(
    d: &Description,
    seq: &[Field],
    prefix: &str,
    fields: &mut Vec<FilterField>,
    depth: usize,
) -> Result<Layout, String> {
    let mut slots = Vec::with_capacity(seq.len());
    for f in seq {
        let name = format!("{prefix}.{}", f.id);
        if fields.len() >= MAX_FIELDS {
            return Err(format!(
                "the description defines more than {MAX_FIELDS} filter fields (a type used in many places counts once per place)"
            ));
        }
        fields.push(FilterField {
            name: name.clone(),
            label: f.label.clone(),
            doc: f.doc.clone(),
            kind: f.kind,
            enumeration: f.enumeration,
            divisor: f.divisor,
            repeated: f.repeat != super::model::Repeat::Once,
            role: f.role,
        });
        let index = fields.len() - 1;
        let inner = match f.kind {
            Kind::User(t) if depth <= super::load::MAX_TYPE_DEPTH => {
                Some(layout(d, &d.types[t].seq, &name, fields, depth + 1)?)
            }
            _ => None,
        };
        slots.push(Slot {
            field: index,
            inner,
        });
    }
    Ok(Layout { slots })
}
