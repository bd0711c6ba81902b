//! LALR(1) parse tables built the way goyacc builds them, so that a parser driven by them
//! makes goyacc's decisions: the same conflicts resolved the same way, the same default
//! reductions, the same states that reduce without reading a token.
//!
//! - States are the LR(0) item sets; lookaheads are LALR(1) (spontaneous generation and
//!   propagation, as in the Dragon book, algorithm 4.63), which is what yacc computes.
//! - Shift/reduce conflicts: if the rule or the token has no precedence, shift; otherwise the
//!   higher precedence wins, and equal precedence follows the token's associativity
//!   (`%nonassoc` is not supported: `parser.go.y` does not use it).
//!   Reduce/reduce conflicts: the earlier rule. (goyacc's `precftn`.)
//! - Every state that can reduce makes its most frequent reduction the default, taken on any
//!   token without an action of its own, including tokens that are errors; ties go to the
//!   reduction met first in token order. (goyacc's `wract`.) A syntax error is therefore
//!   only found in a state that has nothing left to reduce.
//! - A state without shifts takes its default without reading a token, unless other
//!   reductions or the accept action depend on the token. (goyacc's `yyPact == yyFlag`.)

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assoc {
    Left,
    Right,
}

/// A precedence level (0 = none) and associativity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prec {
    pub level: u8,
    pub assoc: Assoc,
}

impl Prec {
    pub const NONE: Prec = Prec {
        level: 0,
        assoc: Assoc::Left,
    };
}

/// A rule: symbols below `Spec::terminals` are terminals, the rest nonterminals.
pub struct SpecRule {
    pub lhs: usize,
    pub rhs: Vec<usize>,
    pub prec: Prec,
}

/// A grammar. Rule 0 must be `$accept: start $end`.
pub struct Spec {
    pub terminals: usize,
    pub nonterminals: usize,
    pub rules: Vec<SpecRule>,
    pub token_prec: Vec<Prec>,
    pub end: usize,
    pub error: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    None,
    Shift(u16),
    Reduce(u16),
    Accept,
}

pub struct Tables {
    pub terminals: usize,
    pub nonterminals: usize,
    /// `states × terminals`: shifts, and the reductions that are not the state's default.
    pub actions: Vec<Act>,
    pub default: Vec<Option<u16>>,
    /// No shifts: the default is taken without reading a token (unless `reads`).
    pub simple: Vec<bool>,
    /// Some action besides shifts depends on the token.
    pub exceptions: Vec<bool>,
    /// `states × nonterminals`; `u16::MAX` for none.
    pub gotos: Vec<u16>,
    pub rule_lhs: Vec<u16>,
    pub rule_len: Vec<u16>,
    /// Kept for the tests that compare the tables with goyacc's report.
    #[cfg_attr(not(test), allow(dead_code))]
    pub shift_reduce_conflicts: usize,
    #[cfg_attr(not(test), allow(dead_code))]
    pub reduce_reduce_conflicts: usize,
}

impl Tables {
    #[cfg(test)]
    pub fn states(&self) -> usize {
        self.default.len()
    }

    pub fn action(&self, state: usize, token: usize) -> Act {
        self.actions[state * self.terminals + token]
    }

    pub fn goto(&self, state: usize, nonterminal: usize) -> Option<usize> {
        match self.gotos[state * self.nonterminals + nonterminal] {
            u16::MAX => None,
            s => Some(usize::from(s)),
        }
    }
}

/// A bit set of terminals; bit 63 marks "propagated from the kernel item".
type Set = u64;
const PROPAGATE: Set = 1 << 63;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct Item {
    rule: u16,
    dot: u16,
}

struct Builder<'s> {
    spec: &'s Spec,
    rules_of: Vec<Vec<u16>>,
    nullable: Vec<bool>,
    first: Vec<Set>,
    /// Item id = offset of the rule + dot.
    item_base: Vec<usize>,
    items: usize,
}

impl<'s> Builder<'s> {
    fn new(spec: &'s Spec) -> Self {
        let mut rules_of = vec![Vec::new(); spec.nonterminals];
        let mut item_base = Vec::with_capacity(spec.rules.len());
        let mut items = 0;
        for (i, r) in spec.rules.iter().enumerate() {
            rules_of[r.lhs].push(i as u16);
            item_base.push(items);
            items += r.rhs.len() + 1;
        }
        let mut b = Builder {
            spec,
            rules_of,
            nullable: vec![false; spec.nonterminals],
            first: vec![0; spec.nonterminals],
            item_base,
            items,
        };
        b.first_sets();
        b
    }

    fn is_terminal(&self, sym: usize) -> bool {
        sym < self.spec.terminals
    }

    fn first_sets(&mut self) {
        let mut changed = true;
        while changed {
            changed = false;
            for r in &self.spec.rules {
                let (set, nullable) = self.first_of(&r.rhs);
                if self.first[r.lhs] | set != self.first[r.lhs] {
                    self.first[r.lhs] |= set;
                    changed = true;
                }
                if nullable && !self.nullable[r.lhs] {
                    self.nullable[r.lhs] = true;
                    changed = true;
                }
            }
        }
    }

    fn first_of(&self, symbols: &[usize]) -> (Set, bool) {
        let mut set = 0;
        for &s in symbols {
            if self.is_terminal(s) {
                return (set | 1 << s, false);
            }
            let n = s - self.spec.terminals;
            set |= self.first[n];
            if !self.nullable[n] {
                return (set, false);
            }
        }
        (set, true)
    }

    fn next_symbol(&self, item: Item) -> Option<usize> {
        self.spec.rules[usize::from(item.rule)]
            .rhs
            .get(usize::from(item.dot))
            .copied()
    }

    fn id(&self, item: Item) -> usize {
        self.item_base[usize::from(item.rule)] + usize::from(item.dot)
    }

    fn closure0(&self, kernel: &[Item]) -> Vec<Item> {
        let mut items = kernel.to_vec();
        let mut added = vec![false; self.spec.nonterminals];
        let mut i = 0;
        while i < items.len() {
            if let Some(s) = self.next_symbol(items[i]).filter(|s| !self.is_terminal(*s)) {
                let n = s - self.spec.terminals;
                if !added[n] {
                    added[n] = true;
                    items.extend(self.rules_of[n].iter().map(|&rule| Item { rule, dot: 0 }));
                }
            }
            i += 1;
        }
        items
    }

    /// LR(1) closure. `la` and `member` (indexed by item id) must be clear on entry; they
    /// are left holding the returned items' lookaheads and membership, for the caller to clear.
    fn closure1(&self, seeds: &[(Item, Set)], la: &mut [Set], member: &mut [bool]) -> Vec<Item> {
        let mut order: Vec<Item> = Vec::new();
        let mut queue: Vec<Item> = Vec::new();
        for &(item, set) in seeds {
            let id = self.id(item);
            if !member[id] {
                member[id] = true;
                order.push(item);
            }
            la[id] |= set;
            queue.push(item);
        }
        while let Some(item) = queue.pop() {
            let Some(s) = self.next_symbol(item).filter(|s| !self.is_terminal(*s)) else {
                continue;
            };
            let rhs = &self.spec.rules[usize::from(item.rule)].rhs;
            let (first, nullable) = self.first_of(&rhs[usize::from(item.dot) + 1..]);
            let add = first | if nullable { la[self.id(item)] } else { 0 };
            for &rule in &self.rules_of[s - self.spec.terminals] {
                let next = Item { rule, dot: 0 };
                let id = self.id(next);
                if !member[id] {
                    member[id] = true;
                    order.push(next);
                } else if la[id] | add == la[id] {
                    continue;
                }
                la[id] |= add;
                queue.push(next);
            }
        }
        order
    }
}

/// Builds the tables for `spec`.
pub fn build(spec: &Spec) -> Tables {
    let b = Builder::new(spec);
    let t = spec.terminals;
    let symbols = spec.terminals + spec.nonterminals;

    // LR(0) states.
    let mut kernels: Vec<Vec<Item>> = vec![vec![Item { rule: 0, dot: 0 }]];
    let mut index: HashMap<Vec<Item>, usize> = HashMap::new();
    index.insert(kernels[0].clone(), 0);
    let mut transitions: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut s = 0;
    while s < kernels.len() {
        let closure = b.closure0(&kernels[s]);
        let mut by_symbol: Vec<Vec<Item>> = vec![Vec::new(); symbols];
        for item in &closure {
            if let Some(x) = b.next_symbol(*item) {
                by_symbol[x].push(Item {
                    rule: item.rule,
                    dot: item.dot + 1,
                });
            }
        }
        let mut out = Vec::new();
        for (x, mut kernel) in by_symbol.into_iter().enumerate() {
            // goyacc never shifts `$end`: the accept action takes its place.
            if kernel.is_empty() || x == spec.end {
                continue;
            }
            kernel.sort();
            kernel.dedup();
            let target = *index.entry(kernel.clone()).or_insert_with(|| {
                kernels.push(kernel);
                kernels.len() - 1
            });
            out.push((x, target));
        }
        transitions.push(out);
        s += 1;
    }
    let states = kernels.len();
    let target_of = |s: usize, x: usize| {
        transitions[s]
            .iter()
            .find(|(y, _)| *y == x)
            .map(|(_, target)| *target)
    };

    // LALR(1) lookaheads of kernel items: spontaneous ones, then propagation to a fixpoint.
    let mut kernel_la: Vec<Vec<Set>> = kernels.iter().map(|k| vec![0; k.len()]).collect();
    let mut propagate: Vec<((usize, usize), (usize, usize))> = Vec::new();
    let mut la = vec![0; b.items];
    let mut member = vec![false; b.items];
    for (s, kernel) in kernels.iter().enumerate() {
        for (k, &item) in kernel.iter().enumerate() {
            let closure = b.closure1(&[(item, PROPAGATE)], &mut la, &mut member);
            for &c in &closure {
                let set = la[b.id(c)];
                la[b.id(c)] = 0;
                member[b.id(c)] = false;
                let Some(x) = b.next_symbol(c).filter(|x| *x != spec.end) else {
                    continue;
                };
                let Some(j) = target_of(s, x) else {
                    continue;
                };
                let advanced = Item {
                    rule: c.rule,
                    dot: c.dot + 1,
                };
                let Ok(kj) = kernels[j].binary_search(&advanced) else {
                    continue;
                };
                kernel_la[j][kj] |= set & !PROPAGATE;
                if set & PROPAGATE != 0 {
                    propagate.push(((s, k), (j, kj)));
                }
            }
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for &((s, k), (j, kj)) in &propagate {
            let from = kernel_la[s][k];
            if kernel_la[j][kj] | from != kernel_la[j][kj] {
                kernel_la[j][kj] |= from;
                changed = true;
            }
        }
    }

    // Actions.
    let mut actions = vec![Act::None; states * t];
    let mut default = vec![None; states];
    let mut simple = vec![false; states];
    let mut exceptions = vec![false; states];
    let mut gotos = vec![u16::MAX; states * spec.nonterminals];
    let mut shift_reduce_conflicts = 0;
    let mut reduce_reduce_conflicts = 0;
    for s in 0..states {
        let row = &mut actions[s * t..(s + 1) * t];
        for &(x, target) in &transitions[s] {
            if x < t {
                row[x] = Act::Shift(target as u16);
            } else {
                gotos[s * spec.nonterminals + (x - t)] = target as u16;
            }
        }
        if kernels[s].contains(&Item { rule: 0, dot: 1 }) {
            row[spec.end] = Act::Accept;
        }
        let seeds: Vec<(Item, Set)> = kernels[s]
            .iter()
            .zip(&kernel_la[s])
            .map(|(i, l)| (*i, *l))
            .collect();
        let closure = b.closure1(&seeds, &mut la, &mut member);
        for &c in &closure {
            let set = la[b.id(c)];
            la[b.id(c)] = 0;
            member[b.id(c)] = false;
            if b.next_symbol(c).is_some() {
                continue;
            }
            let rule = c.rule;
            for (k, entry) in row.iter_mut().enumerate() {
                if set & (1 << k) == 0 {
                    continue;
                }
                match *entry {
                    Act::None => *entry = Act::Reduce(rule),
                    Act::Reduce(other) => {
                        reduce_reduce_conflicts += 1;
                        *entry = Act::Reduce(other.min(rule));
                    }
                    Act::Shift(_) | Act::Accept => {
                        let rule_prec = spec.rules[usize::from(rule)].prec;
                        let token_prec = spec.token_prec[k];
                        if rule_prec.level == 0 || token_prec.level == 0 {
                            shift_reduce_conflicts += 1;
                        } else if token_prec.level == rule_prec.level {
                            if token_prec.assoc == Assoc::Left {
                                *entry = Act::Reduce(rule);
                            }
                        } else if token_prec.level < rule_prec.level {
                            *entry = Act::Reduce(rule);
                        }
                    }
                }
            }
        }
        // The most frequent reduction becomes the default.
        let mut best: Option<u16> = None;
        let mut best_count = 0;
        for entry in row.iter() {
            let Act::Reduce(r) = *entry else { continue };
            if Some(r) == best {
                continue;
            }
            let count = row.iter().filter(|e| **e == Act::Reduce(r)).count();
            if count > best_count {
                best = Some(r);
                best_count = count;
            }
        }
        if matches!(row[spec.error], Act::Shift(_)) {
            best = None;
        }
        if let Some(r) = best {
            for entry in row.iter_mut() {
                if *entry == Act::Reduce(r) {
                    *entry = Act::None;
                }
            }
        }
        default[s] = best;
        simple[s] = !row.iter().any(|e| matches!(e, Act::Shift(_)));
        exceptions[s] = row
            .iter()
            .any(|e| matches!(e, Act::Reduce(_) | Act::Accept));
    }

    Tables {
        terminals: t,
        nonterminals: spec.nonterminals,
        actions,
        default,
        simple,
        exceptions,
        gotos,
        rule_lhs: spec.rules.iter().map(|r| r.lhs as u16).collect(),
        rule_len: spec.rules.iter().map(|r| r.rhs.len() as u16).collect(),
        shift_reduce_conflicts,
        reduce_reduce_conflicts,
    }
}
