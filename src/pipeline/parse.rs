//! Reading generator replies (PIPE-17): the first JSON array of strings in the text,
//! even after prose that contains brackets.

/// The strings of the first JSON array of strings in `text`, or `None` when there is none.
#[must_use]
pub fn first_string_array(text: &str) -> Option<Vec<String>> {
    for (start, _) in text.match_indices('[') {
        let mut stream = serde_json::Deserializer::from_str(&text[start..])
            .into_iter::<Vec<serde_json::Value>>();
        if let Some(Ok(items)) = stream.next() {
            let strings: Option<Vec<String>> = items
                .into_iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect();
            if let Some(strings) = strings {
                return Some(strings);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_after_prose() {
        assert_eq!(
            first_string_array(r#"["a", "b"]"#),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            first_string_array(
                "Sure [see below]: here [1] are they:\n```json\n[\"x\", \"y [z]\"]\n```"
            ),
            Some(vec!["x".into(), "y [z]".into()])
        );
        assert_eq!(first_string_array("no array"), None);
        assert_eq!(first_string_array("[1, 2]"), None);
        assert_eq!(first_string_array("[]"), Some(vec![]));
    }
}
