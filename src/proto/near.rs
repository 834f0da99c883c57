//! "Did you mean": the names nearest to a mistyped one, for every error that names a field, a
//! rule, a message or a profile.

/// Levenshtein distance, over bytes (the names are ASCII).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// How far `candidate` is from what was typed: a name it begins (`rtype.seq` for
/// `rtype.sequence`) is one edit away, the shorter completions first; otherwise the edit
/// distance, when it is small for the candidate's length.
fn distance(typed: &str, candidate: &str) -> Option<(usize, usize)> {
    if candidate.len() > typed.len() && candidate.starts_with(typed) && !typed.is_empty() {
        return Some((1, candidate.len()));
    }
    let d = edit_distance(typed, candidate);
    (d <= (candidate.len() / 3).max(2)).then_some((d, candidate.len()))
}

/// Up to `max` of `candidates` nearest to `typed` (all equally near), best first.
pub fn nearest<'a>(
    typed: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    let mut scored: Vec<((usize, usize), &str)> = candidates
        .into_iter()
        .filter_map(|c| Some((distance(typed, c)?, c)))
        .collect();
    scored.sort();
    let best = scored.first().map_or(0, |s| s.0 .0);
    scored
        .into_iter()
        .take_while(|(d, _)| d.0 == best)
        .take(max)
        .map(|(_, n)| n)
        .collect()
}

/// "; did you mean A?" or "; did you mean A, B?" when some candidate is near, else nothing.
pub fn hint<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match nearest(typed, candidates, 3).as_slice() {
        [] => String::new(),
        near => format!("; did you mean {}?", near.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("entitiy", "entity"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn a_beginning_is_nearer_than_a_short_name_with_other_letters() {
        let names = [
            "rtype.crc",
            "rtype.sequence",
            "rtype.sequence_ack",
            "rtype.tick",
        ];
        assert_eq!(
            nearest("rtype.seq", names, 3),
            ["rtype.sequence", "rtype.sequence_ack"]
        );
        assert_eq!(nearest("rtype.seq", names, 1), ["rtype.sequence"]);
        assert_eq!(nearest("rtype.tikc", names, 3), ["rtype.tick"]);
        assert_eq!(nearest("udp.port", names, 3), Vec::<&str>::new());
        assert_eq!(
            hint(
                "rtype.pong.emtpy",
                ["rtype.pong.empty", "rtype.crc.mismatch"]
            ),
            "; did you mean rtype.pong.empty?"
        );
    }
}
