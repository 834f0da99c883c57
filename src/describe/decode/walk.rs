//! The interpreter's walk through one sequence of fields: reads each field (integers, bit fields,
//! strings, bytes, repeats, switches) within bounds, notes the values expressions use, and
//! reports where the bytes depart from the description.

use super::*;

impl<'n> Walk<'_, 'n> {
    pub(super) fn problem(
        &mut self,
        check: Check,
        at: usize,
        field: &'n str,
        expected: String,
        found: String,
    ) {
        self.problem_rule(Description::rule_index(check), at, field, expected, found);
    }

    fn problem_rule(
        &mut self,
        rule: usize,
        at: usize,
        field: &'n str,
        expected: String,
        found: String,
    ) {
        let offset = if self.decompressed { self.base } else { at };
        self.problems.push(Problem {
            rule,
            offset: offset as u32,
            field,
            expected,
            found,
        });
    }

    fn name(&self, slot: usize) -> &'n str {
        &self.names.fields[slot].name
    }

    /// Moves to the next whole byte after bit fields.
    pub(super) fn align(&mut self) {
        if self.bit > 0 {
            self.bit = 0;
            self.pos += 1;
        }
    }

    fn push(
        &mut self,
        field: usize,
        depth: u8,
        offset: usize,
        len: usize,
        value: Value,
    ) -> Result<(), Stop> {
        if self.out.len() >= MAX_ITEMS {
            let name = self.name(field);
            self.problem(
                Check::Truncated,
                offset,
                name,
                format!("at most {MAX_ITEMS} fields"),
                "more".into(),
            );
            return Err(Stop::Undecodable);
        }
        self.out.push(Item {
            field,
            depth,
            offset: offset as u32,
            len: len as u32,
            decompressed: self.decompressed,
            value,
        });
        Ok(())
    }

    fn var(&self, v: u16) -> Option<i64> {
        self.vars.get(v as usize).copied().flatten()
    }

    pub(super) fn seq(&mut self, seq: &[Field], layout: &Layout, depth: u8) -> Result<(), Stop> {
        for (f, slot) in seq.iter().zip(&layout.slots) {
            if let Some(cond) = &f.cond {
                let vars = &*self.vars;
                let lookup = |v: u16| vars.get(v as usize).copied().flatten();
                match cond.eval(&lookup) {
                    Some(0) => continue,
                    Some(_) => {}
                    None => {
                        let name = self.name(slot.field);
                        self.problem(
                            Check::Truncated,
                            self.pos,
                            name,
                            "the fields its `if` reads".into(),
                            "a field that was not read".into(),
                        );
                        return Err(Stop::Undecodable);
                    }
                }
            }
            match &f.repeat {
                Repeat::Once => self.one(f, slot.field, slot.inner.as_ref(), depth)?,
                Repeat::Count(e) => {
                    let lookup = |v: u16| self.var(v);
                    let Some(n) = e.eval(&lookup) else {
                        let name = self.name(slot.field);
                        self.problem(
                            Check::Truncated,
                            self.pos,
                            name,
                            "a count".into(),
                            "a field that was not read".into(),
                        );
                        return Err(Stop::Undecodable);
                    };
                    if n < 0 || n as usize > MAX_REPEAT {
                        let name = self.name(slot.field);
                        self.problem(
                            Check::Valid,
                            self.pos,
                            name,
                            format!("a count from 0 to {MAX_REPEAT}"),
                            n.to_string(),
                        );
                        return Err(Stop::Undecodable);
                    }
                    for _ in 0..n {
                        let before = (self.pos, self.bit);
                        self.one(f, slot.field, slot.inner.as_ref(), depth)?;
                        if (self.pos, self.bit) == before {
                            break;
                        }
                    }
                }
                Repeat::UntilEnd => {
                    let mut count = 0;
                    while self.pos < self.end && count < MAX_REPEAT {
                        let before = (self.pos, self.bit);
                        self.one(f, slot.field, slot.inner.as_ref(), depth)?;
                        count += 1;
                        if (self.pos, self.bit) == before {
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `n` bytes are left for `field`; a truncation problem where they are not.
    fn need(&mut self, field: usize, n: usize) -> Result<(), Stop> {
        let left = self.end.saturating_sub(self.pos);
        if left < n {
            let name = self.name(field);
            let wanted = format!("{n} bytes");
            self.problem(Check::Truncated, self.pos, name, wanted, format!("{left}"));
            return Err(Stop::Truncated);
        }
        Ok(())
    }

    fn take(&mut self, field: usize, n: usize) -> Result<usize, Stop> {
        self.align();
        self.need(field, n)?;
        let at = self.pos;
        self.pos += n;
        Ok(at)
    }

    fn one(
        &mut self,
        f: &Field,
        slot: usize,
        inner: Option<&Layout>,
        depth: u8,
    ) -> Result<(), Stop> {
        match f.kind {
            Kind::Int { width, signed } => {
                let at = self.take(slot, width as usize)?;
                let raw = read_uint(&self.buf[at..at + width as usize], f.endian);
                let value = if signed {
                    let shift = 64 - u32::from(width) * 8;
                    Value::Int(((raw << shift) as i64) >> shift)
                } else if width == 8 && raw > i64::MAX as u64 {
                    Value::UInt(raw)
                } else {
                    Value::Int(raw as i64)
                };
                self.number(f, slot, depth, at, width as usize, value)
            }
            Kind::Float { width } => {
                let at = self.take(slot, width as usize)?;
                let raw = read_uint(&self.buf[at..at + width as usize], f.endian);
                let v = if width == 4 {
                    f64::from(f32::from_bits(raw as u32))
                } else {
                    f64::from_bits(raw)
                };
                self.push(slot, depth, at, width as usize, Value::Float(v))
            }
            Kind::Bits { width } => {
                let needed_bits = usize::from(self.bit) + usize::from(width);
                let bytes = needed_bits.div_ceil(8);
                if self.end.saturating_sub(self.pos) < bytes {
                    let name = self.name(slot);
                    self.problem(
                        Check::Truncated,
                        self.pos,
                        name,
                        format!("{width} bits"),
                        "fewer".into(),
                    );
                    return Err(Stop::Truncated);
                }
                let mut value = 0u64;
                for i in 0..usize::from(width) {
                    let bit = usize::from(self.bit) + i;
                    let byte = self.buf[self.pos + bit / 8];
                    let b = if self.d.bits_big_endian {
                        (byte >> (7 - bit % 8)) & 1
                    } else {
                        (byte >> (bit % 8)) & 1
                    };
                    if self.d.bits_big_endian {
                        value = (value << 1) | u64::from(b);
                    } else {
                        value |= u64::from(b) << i;
                    }
                }
                let at = self.pos;
                let total = usize::from(self.bit) + usize::from(width);
                self.pos += total / 8;
                self.bit = (total % 8) as u8;
                self.number(f, slot, depth, at, bytes, Value::Int(value as i64))
            }
            Kind::Str | Kind::Bytes => {
                let n = self.size(f, slot)?;
                let at = self.take(slot, n)?;
                let bytes = &self.buf[at..at + n];
                if let Some(contents) = &f.contents {
                    if bytes != contents.as_slice() {
                        let name = self.name(slot);
                        self.problem(Check::Contents, at, name, hex(contents), hex(bytes));
                    }
                }
                let value = if f.kind == Kind::Str {
                    let text = bytes.split(|b| *b == 0).next().unwrap_or_default();
                    Value::Text(self.text(f, slot, at, text))
                } else {
                    Value::Bytes(bytes.to_vec())
                };
                self.push(slot, depth, at, n, value)
            }
            Kind::Strz => {
                self.align();
                let rest = &self.buf[self.pos.min(self.end)..self.end];
                let Some(nul) = rest.iter().position(|b| *b == 0) else {
                    let name = self.name(slot);
                    self.problem(
                        Check::Truncated,
                        self.pos,
                        name,
                        "a NUL-terminated string".into(),
                        "no NUL before the end".into(),
                    );
                    return Err(Stop::Truncated);
                };
                let at = self.pos;
                self.pos += nul + 1;
                let text = self.text(f, slot, at, &rest[..nul]);
                self.push(slot, depth, at, nul + 1, Value::Text(text))
            }
            Kind::User(t) => {
                self.align();
                let at = self.pos;
                let index = self.out.len();
                self.push(slot, depth, at, 0, Value::Group)?;
                let saved_end = self.end;
                if let Size::Bytes(_) | Size::ToEnd = f.size {
                    let n = self.size(f, slot)?;
                    self.need(slot, n)?;
                    self.end = self.pos + n;
                }
                let empty = Layout::default();
                let result = self.seq(
                    &self.d.types[t].seq,
                    inner.unwrap_or(&empty),
                    depth.saturating_add(1),
                );
                self.align();
                if self.end != saved_end {
                    self.pos = self.end;
                    self.end = saved_end;
                }
                let len = self.pos - at;
                self.out[index].len = len as u32;
                result
            }
        }
    }

    /// A byte size from `size` or `size-eos`.
    fn size(&mut self, f: &Field, slot: usize) -> Result<usize, Stop> {
        self.align();
        match &f.size {
            Size::ToEnd => Ok(self.end.saturating_sub(self.pos)),
            Size::Natural => Ok(0),
            Size::Bytes(e) => {
                let lookup = |v: u16| self.var(v);
                match e.eval(&lookup) {
                    Some(n) if n >= 0 => Ok(n as usize),
                    found => {
                        let name = self.name(slot);
                        let found =
                            found.map_or("a field that was not read".into(), |n| n.to_string());
                        self.problem(
                            Check::Valid,
                            self.pos,
                            name,
                            "a size of 0 or more".into(),
                            found,
                        );
                        Err(Stop::Undecodable)
                    }
                }
            }
        }
    }

    fn text(&mut self, f: &Field, slot: usize, at: usize, bytes: &[u8]) -> String {
        let ok = match f.encoding {
            Encoding::Ascii => bytes.is_ascii(),
            Encoding::Utf8 => std::str::from_utf8(bytes).is_ok(),
        };
        if !ok {
            let name = self.name(slot);
            let expected = if f.encoding == Encoding::Ascii {
                "ASCII"
            } else {
                "UTF-8"
            };
            self.problem(
                Check::Encoding,
                at,
                name,
                expected.into(),
                hex(&bytes[..bytes.len().min(16)]),
            );
        }
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// An integer: noted for expressions, checked against `contents`, `valid` and `enum`.
    fn number(
        &mut self,
        f: &Field,
        slot: usize,
        depth: u8,
        at: usize,
        len: usize,
        value: Value,
    ) -> Result<(), Stop> {
        let v = value.integer().unwrap_or(0);
        if let Some(var) = self.vars.get_mut(f.var as usize) {
            *var = Some(v);
        }
        if let Some(contents) = &f.contents {
            let bytes = &self.buf[at..at + len];
            if bytes != contents.as_slice() {
                let name = self.name(slot);
                self.problem(Check::Contents, at, name, hex(contents), hex(bytes));
            }
        }
        if let Some(valid) = &f.valid {
            if !valid.accepts(v) {
                let name = self.name(slot);
                let rule = valid.rule;
                self.problem_rule(rule, at, name, valid.expected(), v.to_string());
            }
        }
        if let Some(e) = f.enumeration {
            if self.d.enums[e].name_of(v).is_none() {
                let name = self.name(slot);
                let expected = format!("a value of enum `{}`", self.d.enums[e].id);
                self.problem(Check::Enum, at, name, expected, v.to_string());
            }
        }
        self.push(slot, depth, at, len, value)
    }
}
