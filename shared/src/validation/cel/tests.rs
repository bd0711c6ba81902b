use super::*;

fn check(rule: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    check_rule(rule, &FieldPath::root("rule"), &mut out);
    out
}

fn codes(rule: &str) -> Vec<&'static str> {
    check(rule).iter().map(|f| f.code).collect()
}

#[test]
fn accepts_sveltos_rules() {
    for ok in [
        "resource.status.phase == \"Running\"",
        "has(resource.spec.replicas) && resource.spec.replicas > 0",
        "resource.status.succeeded >= 1 &&\nresource.status.conditions.filter(c, c.type == 'Complete' && c.status == 'True').size() == 1",
        "resource.status.conditions.exists(c, c.type == 'Ready')",
        "resource.spec.containers.all(c, c.image.startsWith('registry/'))",
        "type(resource.spec) == map",
        "true",
        "resource.metadata.name in ['a', 'b'] ? true : false",
    ] {
        assert!(check(ok).is_empty(), "{ok}: {:?}", check(ok));
    }
}

#[test]
fn probe() {
    let Ok(path) = std::env::var("CEL_PROBE") else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    for rule in text.split("\n---\n") {
        let rule = rule.trim_end_matches('\n');
        let f = check(rule);
        println!(
            "{rule:?} => {:?}",
            f.iter()
                .map(|f| format!("{}[{}] {}", f.severity, f.code, f.message))
                .collect::<Vec<_>>()
        );
    }
}
