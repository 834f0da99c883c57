//! The encoder: the decoder's walk run backwards.
//!
//! It walks the same [`Node`]s as `crate::message::walk`, taking each value by its field name from
//! a JSON object (the names the JSON export uses) and writing it big-endian, so a layout is never
//! written down twice: change a field in `proto` and the samples follow.
//!
//! JSON shape, per node:
//! - [`Node::Field`]: the value under `Field.name`. Integers as numbers; floats as numbers or the
//!   strings `"NaN"`, `"inf"`, `"-inf"`; text as a string, or as an array of byte values (to write
//!   bytes that are not UTF-8).
//! - [`Node::Repeat`]: an array of objects under `item.name`. The count is the array's length,
//!   unless the object also gives the count field, whose value then wins (for malformed samples).
//! - [`Node::Switch`]: the tag under its name, the chosen case's object under the case's group
//!   name. A tag no case knows writes the tag alone: the description says nothing of what follows.
//! - [`Node::Masked`]: for each bit set in the last `update_mask`, the profile's field by its name
//!   (integer fields with a divisor take the scaled value: `12.3` with divisor 10 is written 123).
//!   A bit of unknown width (reserved, undefined) takes its raw bytes from `"bitN"`.

use serde_json::Value;

use crate::proto::profile::{BitSlot, Profile, MASK_BITS};
use crate::proto::schema::{Field, Message, Node, Role, Ty};

/// Encodes a message body from `value` (a JSON object; anything for an empty body).
pub fn encode_message(
    msg: &'static Message,
    value: &Value,
    profile: &Profile,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    encode_nodes(msg.body, value, profile, &mut out).map_err(|e| format!("{}: {e}", msg.name))?;
    Ok(out)
}

/// Appends the encoding of `nodes`, valued from the JSON object `value`, to `out`.
pub fn encode_nodes(
    nodes: &'static [Node],
    value: &Value,
    profile: &Profile,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    Encoder {
        profile,
        out,
        mask: 0,
    }
    .nodes(nodes, value)
}

struct Encoder<'a> {
    profile: &'a Profile,
    out: &'a mut Vec<u8>,
    /// The last update mask written, which gates the next [`Node::Masked`] (as in the decoder).
    mask: u16,
}

impl Encoder<'_> {
    fn nodes(&mut self, nodes: &'static [Node], obj: &Value) -> Result<(), String> {
        nodes.iter().try_for_each(|node| self.node(node, obj))
    }

    fn node(&mut self, node: &'static Node, obj: &Value) -> Result<(), String> {
        match node {
            Node::Field(field) => self.field(field, member(obj, field.name)?).map(drop),
            Node::Repeat { count, item } => {
                let items = member(obj, item.name)?
                    .as_array()
                    .ok_or_else(|| format!("`{}` must be an array", item.name))?;
                match obj.get(count.name) {
                    Some(explicit) => self.field(count, explicit)?,
                    None => self.field(count, &Value::from(items.len()))?,
                };
                items.iter().enumerate().try_for_each(|(i, it)| {
                    self.nodes(item.nodes, it)
                        .map_err(|e| format!("{}[{i}]: {e}", item.name))
                })
            }
            Node::Switch { tag, cases, .. } => {
                let chosen = self.field(tag, member(obj, tag.name)?)?;
                match cases.iter().find(|c| u64::from(c.value) == chosen) {
                    Some(case) => {
                        let inner = member(obj, case.group.name)?;
                        self.nodes(case.group.nodes, inner)
                            .map_err(|e| format!("{}: {e}", case.group.name))
                    }
                    None => Ok(()),
                }
            }
            Node::Masked => self.masked(obj),
        }
    }

    /// Writes the fields the current mask selects, in bit order, as the profile lays them out.
    fn masked(&mut self, obj: &Value) -> Result<(), String> {
        for bit in 0..MASK_BITS {
            if self.mask & (1 << bit) == 0 {
                continue;
            }
            match self.profile.bits()[bit] {
                BitSlot::Field(field) => {
                    self.field(field, member(obj, field.name)?)?;
                }
                BitSlot::Reserved | BitSlot::Undefined => {
                    let key = format!("bit{bit}");
                    let bytes = byte_array(&key, member(obj, &key)?)?;
                    self.out.extend_from_slice(&bytes);
                }
            }
        }
        Ok(())
    }

    /// Writes one field; returns its raw integer (the float's bits, 0 for text).
    fn field(&mut self, field: &'static Field, value: &Value) -> Result<u64, String> {
        let raw = match field.ty {
            Ty::Str8 => {
                let bytes = text_bytes(field, value)?;
                let len = u8::try_from(bytes.len()).map_err(|_| {
                    format!(
                        "`{}` is {} bytes, more than a u8 length allows",
                        field.name,
                        bytes.len()
                    )
                })?;
                self.out.push(len);
                self.out.extend_from_slice(&bytes);
                0
            }
            Ty::F32 => {
                let bits = (float(field, value)? as f32).to_bits();
                self.out.extend_from_slice(&bits.to_be_bytes());
                u64::from(bits)
            }
            ty => {
                let n = integer(field, value)?;
                let (min, max) = int_range(ty);
                if n < min || n > max {
                    return Err(format!(
                        "`{}` = {n} does not fit a {}",
                        field.name,
                        ty.name()
                    ));
                }
                let width = ty.width().unwrap_or(0);
                // Two's complement, big-endian, cut to the field's width.
                self.out
                    .extend_from_slice(&(n as u64).to_be_bytes()[8 - width..]);
                n as u64 & (u64::MAX >> (64 - 8 * width))
            }
        };
        if field.role == Role::UpdateMask {
            self.mask = raw as u16;
        }
        Ok(raw)
    }
}

/// The member `name` of a JSON object; a missing one is an error naming it.
fn member<'v>(obj: &'v Value, name: &str) -> Result<&'v Value, String> {
    obj.get(name)
        .ok_or_else(|| format!("missing field `{name}`"))
}

fn int_range(ty: Ty) -> (i64, i64) {
    match ty {
        Ty::U8 => (0, u8::MAX.into()),
        Ty::U16 => (0, u16::MAX.into()),
        Ty::U32 => (0, u32::MAX.into()),
        Ty::I16 => (i16::MIN.into(), i16::MAX.into()),
        Ty::I32 => (i32::MIN.into(), i32::MAX.into()),
        Ty::F32 | Ty::Str8 => (0, 0),
    }
}

/// An integer field's raw value: the number itself, or `value × divisor` rounded for scaled fields.
fn integer(field: &Field, value: &Value) -> Result<i64, String> {
    let wrong = || format!("`{}` must be an integer, not {value}", field.name);
    if field.divisor == 1 {
        return value.as_i64().ok_or_else(wrong);
    }
    let x = value.as_f64().ok_or_else(wrong)? * f64::from(field.divisor);
    if !x.is_finite() || x.abs() > 1e15 {
        return Err(wrong());
    }
    Ok(x.round() as i64)
}

/// A float field's value: a number, or one of the strings naming a non-finite value.
fn float(field: &Field, value: &Value) -> Result<f64, String> {
    if let Some(x) = value.as_f64() {
        return Ok(x);
    }
    match value.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("nan") => Ok(f64::NAN),
        Some("inf" | "+inf" | "infinity") => Ok(f64::INFINITY),
        Some("-inf" | "-infinity") => Ok(f64::NEG_INFINITY),
        _ => Err(format!(
            "`{}` must be a number, \"NaN\" or \"inf\", not {value}",
            field.name
        )),
    }
}

/// A text field's bytes: a string's UTF-8, or an array of byte values.
fn text_bytes(field: &Field, value: &Value) -> Result<Vec<u8>, String> {
    match value {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        Value::Array(_) => byte_array(field.name, value),
        _ => Err(format!(
            "`{}` must be a string or an array of bytes, not {value}",
            field.name
        )),
    }
}

fn byte_array(name: &str, value: &Value) -> Result<Vec<u8>, String> {
    let wrong = || format!("`{name}` must be an array of byte values (0-255)");
    value
        .as_array()
        .ok_or_else(wrong)?
        .iter()
        .map(|b| {
            b.as_u64()
                .and_then(|b| u8::try_from(b).ok())
                .ok_or_else(wrong)
        })
        .collect()
}
