//! Stable question IDs (DAT-3): the first 16 bytes of a SHA-256 digest over the
//! length-prefixed parts (topic, subtopic, question text), as 32 lowercase hex
//! characters. The 8-byte little-endian length before each part makes the encoding
//! injective, so no two tuples can collide by concatenation.

use sha2::{Digest, Sha256};

/// The ID of the question `text` in `subtopic` of `topic`.
#[must_use]
pub fn question_id(topic: &str, subtopic: &str, text: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [topic, subtopic, text] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(&hasher.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_unambiguous() {
        let id = question_id("t", "s", "q");
        assert_eq!(id.len(), 32);
        assert!(
            id.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(id, question_id("t", "s", "q"));
        assert_ne!(question_id("ab", "c", "q"), question_id("a", "bc", "q"));
        assert_ne!(question_id("t", "s", "q"), question_id("t", "s", "q "));
        assert_ne!(question_id("t", "s", "q"), question_id("t", "s2", "q"));
    }
}
