//! The `view` target's input: what `describe` and `list` read for one promotion, decoded from
//! bytes in one of three forms.
//!
//! - **Generated** (anything not starting with `{`): the bytes are choices ([`Choices`]) for a
//!   ClusterPromotion ([`super::promotion`]), then for its ClusterProfiles, ClusterSummaries and
//!   Events ([`super::cluster`]).
//! - **A JSON object**, optionally followed by a NUL byte and choices: the object is the
//!   ClusterPromotion as stored (a seed can be a real object), and the cluster data is generated
//!   for it from the choices after the NUL.
//! - **A JSON envelope** `{"object": …, "profiles": …, "summaries": …, "events": …}`, optionally
//!   followed by NUL and choices: each list is given as an array of objects, as a string (the
//!   list could not be read, and why; `""` not read at all), or left out (generated).
//!
//! Text that starts with `{` but is not JSON is no input ([`decode`] returns `None`).

use serde_json::Value;

use super::cluster::{self, Read};
use super::promotion;
use crate::fuzzing::choices::Choices;

/// How the input was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Generated,
    Object,
    Envelope,
}

pub struct ViewInput {
    pub form: Form,
    /// The ClusterPromotion as stored.
    pub object: Value,
    pub profiles: Read,
    pub summaries: Read,
    pub events: Read,
}

pub fn decode(bytes: &[u8]) -> Option<ViewInput> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    if start.is_none_or(|i| bytes[i] != b'{') {
        let mut c = Choices::new(bytes);
        let object = promotion::promotion(&mut c);
        return Some(with_cluster_data(
            Form::Generated,
            object,
            &mut c,
            [None, None, None],
        ));
    }
    let (json, choices) = match bytes.iter().position(|&b| b == 0) {
        Some(nul) => (&bytes[..nul], &bytes[nul + 1..]),
        None => (bytes, &[][..]),
    };
    let value: Value = serde_json::from_slice(json).ok()?;
    let mut c = Choices::new(choices);
    match envelope(value) {
        Ok((object, given)) => Some(with_cluster_data(Form::Envelope, object, &mut c, given)),
        Err(object) => Some(with_cluster_data(
            Form::Object,
            object,
            &mut c,
            [None, None, None],
        )),
    }
}

/// The object and the lists an envelope gives; `Err` with the value when it is no envelope (an
/// object with `object` and no `kind` or `spec` of its own is one).
fn envelope(value: Value) -> Result<(Value, [Option<Read>; 3]), Value> {
    let is_envelope =
        value.get("object").is_some() && value.get("kind").is_none() && value.get("spec").is_none();
    let Value::Object(mut map) = value else {
        return Err(value);
    };
    if !is_envelope {
        return Err(Value::Object(map));
    }
    let object = map.remove("object").unwrap_or(Value::Null);
    let mut read = |key: &str| {
        map.remove(key).map(|v| match v {
            Value::Array(items) => Ok(items),
            Value::String(why) => Err(why),
            other => Ok(vec![other]),
        })
    };
    let given = [read("profiles"), read("summaries"), read("events")];
    Ok((object, given))
}

fn with_cluster_data(
    form: Form,
    object: Value,
    c: &mut Choices,
    [profiles, summaries, events]: [Option<Read>; 3],
) -> ViewInput {
    let profiles = profiles.unwrap_or_else(|| cluster::profiles(c, &object));
    let summaries = summaries.unwrap_or_else(|| cluster::summaries(c, &object, &profiles));
    let events = events.unwrap_or_else(|| cluster::events(c, &object));
    ViewInput {
        form,
        object,
        profiles,
        summaries,
        events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms() {
        let generated = decode(b"").expect("an empty input is all default choices");
        assert_eq!(generated.form, Form::Generated);
        assert_eq!(generated.object["kind"], "ClusterPromotion");

        let object = decode(br#"{"kind": "ClusterPromotion", "metadata": {"name": "p"}}"#)
            .expect("an object");
        assert_eq!(object.form, Form::Object);
        assert_eq!(object.object["metadata"]["name"], "p");

        let envelope = decode(
            b"{\"object\": {\"metadata\": {\"name\": \"p\"}}, \"profiles\": \"forbidden\",\
              \"summaries\": [{\"a\": 1}]}\x00\x05",
        )
        .expect("an envelope");
        assert_eq!(envelope.form, Form::Envelope);
        assert_eq!(envelope.profiles, Err("forbidden".to_string()));
        assert_eq!(envelope.summaries.map(|s| s.len()), Ok(1));

        assert!(decode(b"{not json").is_none());
    }
}
