//! A JSON document's objects must not repeat a key: `serde_json` keeps the
//! last one silently, so `{"clock_ghz": 1.4, "clock_ghz": 2}` would run at
//! 2 GHz without a word (docs/timing.md: a key given twice is an error).

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// Checks that no object of the JSON text `text` repeats a key; the error
/// names the key and the object's path (`parameters.clock_ghz`). Malformed
/// JSON is left to the caller's parser (no error here).
pub fn no_duplicate_keys(text: &str) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_str(text);
    match de.deserialize_any(Walk(String::new())) {
        Err(e) if e.is_data() => Err(e
            .to_string()
            .split(" at line")
            .next()
            .unwrap_or("")
            .to_string()),
        _ => Ok(()),
    }
}

/// Walks a value, its path so far in hand.
struct Walk(String);

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.0.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.0)
            };
            if !seen.insert(key) {
                return Err(de::Error::custom(format!(
                    "the key `{path}` appears twice (which one counts would be a guess)"
                )));
            }
            map.next_value_seed(Seed(path))?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Seed(format!("{}[{i}]", self.0)))?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// [`Walk`] as a seed, for the values inside objects and arrays.
struct Seed(String);

impl<'de> de::DeserializeSeed<'de> for Seed {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Walk(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_named_with_its_path() {
        assert!(no_duplicate_keys(r#"{"a": 1, "b": {"c": [1, {"d": 2}]}}"#).is_ok());
        let e = no_duplicate_keys(r#"{"clock_ghz": 1.4, "clock_ghz": 2}"#).unwrap_err();
        assert!(e.contains("`clock_ghz` appears twice"), "{e}");
        let e =
            no_duplicate_keys(r#"{"parameters": {"x": {"value": 1, "value": 2}}}"#).unwrap_err();
        assert!(e.contains("`parameters.x.value` appears twice"), "{e}");
        let e = no_duplicate_keys(r#"[{"a": 1}, {"a": 1, "a": 2}]"#).unwrap_err();
        assert!(e.contains("`[1].a` appears twice"), "{e}");
        // Malformed JSON is the parser's to report.
        assert!(no_duplicate_keys("{").is_ok());
    }
}
