//! `--prog-type` and `--prog-types FILE`: program types the caller gives,
//! as a loader's caller does with bpf_program__set_type. `TYPE` types every
//! program whose section names none; `SECTION_GLOB=TYPE[:ATTACH]` types the
//! programs of matching sections (Cilium's `2/7` tail calls, OVS's
//! `tail-32`, an unknown `mysec`), whatever their section says;
//! `PATH_GLOB<TAB>TYPE` (the corpus's prog_types.tsv) types the programs
//! whose section names none in objects whose path matches.

use super::filter::glob_matches;
use anyhow::Context;
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_object::Object;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgTypeRule {
    /// None: the rule types programs whose section names no type.
    pub section: Option<String>,
    /// With no section: only objects whose path matches this glob.
    pub path: Option<String>,
    pub prog_type: ProgType,
    pub attach: Option<AttachType>,
}

/// `TYPE` or `SECTION_GLOB=TYPE[:ATTACH]`, with libbpf's type and attach
/// type names (`sched_cls`, `xdp`, `cgroup_inet_ingress`, ...).
pub fn parse_rule(text: &str) -> Result<ProgTypeRule, String> {
    if let Some((path, spec)) = text.trim().split_once('\t') {
        let mut rule = parse_rule(spec)?;
        if rule.section.is_some() || path.trim().is_empty() {
            return Err(format!("'{text}': expected PATH_GLOB<TAB>TYPE"));
        }
        rule.path = Some(path.trim().to_owned());
        return Ok(rule);
    }
    let text = text.trim();
    let (section, spec) = match text.rsplit_once('=') {
        Some((glob, spec)) if !glob.is_empty() => (Some(glob.to_owned()), spec),
        Some(_) => return Err(format!("'{text}': the section glob before '=' is empty")),
        None => (None, text),
    };
    let (type_name, attach_name) = match spec.split_once(':') {
        Some((t, a)) => (t, Some(a)),
        None => (spec, None),
    };
    let prog_type = ProgType::from_name(type_name)
        .filter(|t| *t != ProgType::UNSPEC)
        .ok_or_else(|| {
            format!(
                "unknown program type '{type_name}' (libbpf names: xdp, sched_cls, socket_filter, ...)"
            )
        })?;
    let attach = match attach_name {
        Some(a) => Some(AttachType::from_name(a).ok_or_else(|| {
            format!("unknown attach type '{a}' (libbpf names: xdp, cgroup_inet_ingress, ...)")
        })?),
        None => None,
    };
    Ok(ProgTypeRule {
        section,
        path: None,
        prog_type,
        attach,
    })
}

/// One rule per line; blank lines and `#` comments are skipped.
pub fn read_rules(path: &Path) -> anyhow::Result<Vec<ProgTypeRule>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading program types from {}", path.display()))?;
    let mut rules = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let rule =
            parse_rule(line).map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), n + 1))?;
        rules.push(rule);
    }
    Ok(rules)
}

/// Whether some rule names `.text`: then the global functions of objects
/// without program sections are listed as programs, for it to type.
pub fn types_text(rules: &[ProgTypeRule]) -> bool {
    rules.iter().any(|r| {
        r.section
            .as_deref()
            .is_some_and(|g| glob_matches(".text", g))
    })
}

/// Types the programs of `obj`: the first section rule whose glob matches
/// the section wins; otherwise the first plain rule types a program whose
/// section names none.
pub fn apply(rules: &[ProgTypeRule], obj: &mut Object, path: &str) {
    for p in obj.programs.iter_mut() {
        let by_section = rules.iter().find(|r| {
            r.section
                .as_deref()
                .is_some_and(|g| glob_matches(&p.section, g))
        });
        let rule = by_section.or_else(|| {
            (p.prog_type == ProgType::UNSPEC)
                .then(|| {
                    rules.iter().find(|r| {
                        r.section.is_none()
                            && r.path.as_deref().is_none_or(|g| glob_matches(path, g))
                    })
                })
                .flatten()
        });
        let Some(rule) = rule else { continue };
        // The section's attach type only stays with the section's type.
        if rule.attach.is_some() || rule.prog_type != p.prog_type {
            p.expected_attach_type = rule.attach;
        }
        p.prog_type = rule.prog_type;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        assert_eq!(
            parse_rule("sched_cls").unwrap(),
            ProgTypeRule {
                section: None,
                path: None,
                prog_type: ProgType::SCHED_CLS,
                attach: None
            }
        );
        let r = parse_rule("2/*=sched_cls").unwrap();
        assert_eq!(r.section.as_deref(), Some("2/*"));
        let r = parse_rule("cg*=cgroup_skb:cgroup_inet_ingress").unwrap();
        assert_eq!(r.prog_type, ProgType::CGROUP_SKB);
        assert_eq!(r.attach, Some(AttachType::CGROUP_INET_INGRESS));
        assert!(parse_rule("x=nonsense").is_err());
        assert!(parse_rule("=xdp").is_err());
        assert!(parse_rule("unspec").is_err());
        assert!(parse_rule("x=xdp:nonsense").is_err());
    }

    #[test]
    fn section_rules_win_and_plain_rules_fill_unspec() {
        let mut obj = Object::single_program("a", ProgType::UNSPEC, vec![]);
        let mut b = obj.programs[0].clone();
        b.name = "b".into();
        b.section = "xdp".into();
        b.prog_type = ProgType::XDP;
        b.expected_attach_type = Some(AttachType::XDP);
        let mut c = b.clone();
        c.name = "c".into();
        c.section = "2/7".into();
        c.prog_type = ProgType::UNSPEC;
        c.expected_attach_type = None;
        obj.programs.push(b);
        obj.programs.push(c);
        let rules = vec![
            parse_rule("2/*=sched_act").unwrap(),
            parse_rule("sched_cls").unwrap(),
        ];
        apply(&rules, &mut obj, "x.o");
        let types: Vec<_> = obj.programs.iter().map(|p| p.prog_type).collect();
        assert_eq!(
            types,
            vec![ProgType::SCHED_CLS, ProgType::XDP, ProgType::SCHED_ACT]
        );
        assert_eq!(obj.programs[1].expected_attach_type, Some(AttachType::XDP));
        assert!(types_text(&[parse_rule(".text=xdp").unwrap()]));
        assert!(!types_text(&rules));
    }

    #[test]
    fn path_rules_type_only_the_objects_they_match() {
        let r = parse_rule("*/cilium/*.o\tsched_cls").unwrap();
        assert_eq!(r.path.as_deref(), Some("*/cilium/*.o"));
        assert!(parse_rule("*.o\tnonsense").is_err());
        assert!(parse_rule("*.o\tsec=xdp").is_err());
        let rules = vec![r];
        let mut obj = Object::single_program("a", ProgType::UNSPEC, vec![]);
        apply(&rules, &mut obj, "corpus/ovs/datapath.o");
        assert_eq!(obj.programs[0].prog_type, ProgType::UNSPEC);
        apply(&rules, &mut obj, "corpus/cilium/bpf_lxc.o");
        assert_eq!(obj.programs[0].prog_type, ProgType::SCHED_CLS);
    }
}
