//! Breakpoints and watchpoints (docs/user-guide.md §12 "Breakpoints"): what
//! each stops on, its condition and ignore count, and how a firmware
//! engineer spells it (`break doorbell eng0.m2s.q0`, `break fault`, `break
//! line 42`, `break cycle 5000`, `break tpb0#3`, `break race`, `watch
//! tpb0.sem.read[3] >= 16`, `watch eng0.m2s.q0.tdrhp`).

use soc::Device;

use crate::place::{Cmp, Place, Test, Value, parse_u32, parse_u64, split_test};

/// What a breakpoint stops on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BreakKind {
    /// A doorbell: before a trace doorbell statement (a `doorbell` or a
    /// `write32` to `TDRTP_INC`/`RDRTP_INC`), or after the firmware rang
    /// one.
    Doorbell(Place),
    /// Before the statement at this trace line.
    Line(u32),
    /// When simulated time reaches this cycle.
    Cycle(u64),
    /// When a core's firmware takes up instruction word `seq` (`tpb0#3`).
    Word {
        /// The core.
        tpb: u8,
        /// The word's number on the core, from 0.
        seq: u64,
    },
    /// An error cause bit raised (any, or one named).
    Fault {
        /// Where.
        place: Place,
        /// The cause (`PREF_RING_ID` or `SEC_A_INT_CAUSE.PREF_RING_ID`).
        cause: Option<String>,
    },
    /// A packet completed.
    Packet(Place),
    /// An engine direction changed state, or a queue was reset or went
    /// NON_ACTIVE.
    State(Place),
    /// A descriptor's ring id did not match (the prefetch `PREF_RING_ID`
    /// cause).
    RingId(Place),
    /// The race detector found a new race (docs/races.md): two unordered
    /// accesses to overlapping bytes, at least one a write, from a pair of
    /// sources not reported before.
    Race,
    /// A value changed, or a test of it became true.
    Watch {
        /// The value.
        value: Value,
        /// `OP NUMBER`, when only a change that makes it true stops.
        test: Option<(Cmp, u32)>,
    },
}

impl BreakKind {
    /// The spec as `info break` shows it.
    pub fn describe(&self) -> String {
        let at = |p: &Place| match p {
            Place::Any => String::new(),
            p => format!(" {p}"),
        };
        match self {
            BreakKind::Doorbell(p) => format!("doorbell{}", at(p)),
            BreakKind::Line(l) => format!("line {l}"),
            BreakKind::Cycle(c) => format!("cycle {c}"),
            BreakKind::Word { tpb, seq } => format!("tpb{tpb}#{seq}"),
            BreakKind::Fault { place, cause } => format!(
                "fault{}{}",
                at(place),
                cause.as_ref().map(|c| format!(" {c}")).unwrap_or_default()
            ),
            BreakKind::Packet(p) => format!("packet{}", at(p)),
            BreakKind::State(p) => format!("state{}", at(p)),
            BreakKind::RingId(p) => format!("ring-id{}", at(p)),
            BreakKind::Race => "race".to_string(),
            BreakKind::Watch { value, test } => match test {
                Some((cmp, rhs)) => format!("{} {} {rhs:#x}", value.text, cmp.symbol()),
                None => value.text.clone(),
            },
        }
    }

    /// `break` or `watch`.
    pub fn type_name(&self) -> &'static str {
        match self {
            BreakKind::Watch { .. } => "watch",
            _ => "break",
        }
    }

    /// Whether it looks at device events (so the session collects them
    /// after every engine step).
    pub fn needs_events(&self) -> bool {
        matches!(
            self,
            BreakKind::Doorbell(_)
                | BreakKind::Word { .. }
                | BreakKind::Fault { .. }
                | BreakKind::Packet(_)
                | BreakKind::State(_)
                | BreakKind::RingId(_)
        )
    }
}

/// The breakpoint kinds `break` takes, for messages and "did you mean".
pub const BREAK_KINDS: &[&str] = &[
    "doorbell", "line", "cycle", "fault", "packet", "state", "ring-id", "race", "word",
];

/// Parses what follows `break`: `doorbell [PLACE]`, `line N` (or just N),
/// `cycle N`, `tpbN#K` (or `word tpbN#K`), `fault [PLACE] [CAUSE]`,
/// `packet [PLACE]`, `state [PLACE]`, `ring-id [PLACE]`, `race`.
///
/// # Errors
///
/// What is wrong, naming the unknown word (with a "did you mean").
pub fn parse_break(device: &Device, text: &str) -> Result<BreakKind, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let place = |w: Option<&&str>| -> Result<Place, String> {
        match w {
            None => Ok(Place::Any),
            Some(w) => Place::parse(device, w),
        }
    };
    let no_core = |kind: &str, p: Place| -> Result<Place, String> {
        match p {
            Place::Core(t) => Err(format!(
                "break {kind} takes an engine or a queue, not a core (tpb{t}); break doorbell tpb{t} stops at its firmware's doorbells"
            )),
            p => Ok(p),
        }
    };
    let at_most = |n: usize, usage: &str| -> Result<(), String> {
        if words.len() > n {
            Err(format!("too many words: break {usage}"))
        } else {
            Ok(())
        }
    };
    match words.as_slice() {
        [] => Err(format!(
            "break what? (break {} …; e.g. break doorbell eng0.m2s.q0, break line 42, break cycle 5000, break tpb0#3, break fault)",
            BREAK_KINDS.join(" | ")
        )),
        [w, ..] if w.contains('#') => {
            at_most(1, "tpbN#K")?;
            parse_word(device, w)
        }
        ["word" | "inst", w] => parse_word(device, w),
        ["doorbell" | "db", rest @ ..] => {
            at_most(2, "doorbell [ENGINE | QUEUE | CORE]")?;
            Ok(BreakKind::Doorbell(place(rest.first())?))
        }
        ["line", n] => Ok(BreakKind::Line(parse_line(n)?)),
        [n] if n.starts_with(|c: char| c.is_ascii_digit()) => Ok(BreakKind::Line(parse_line(n)?)),
        ["cycle", n] => Ok(BreakKind::Cycle(parse_u64(n)?)),
        ["fault", rest @ ..] => {
            at_most(3, "fault [ENGINE | QUEUE] [CAUSE]")?;
            let (p, cause) = match rest {
                [] => (Place::Any, None),
                [one] => match Place::parse(device, one) {
                    Ok(p) => (p, None),
                    Err(place_error) => match cause_name(device, one) {
                        Ok(c) => (Place::Any, Some(c)),
                        Err(cause_error) => {
                            return Err(format!(
                                "`{one}` is neither an engine or queue ({place_error}) nor a cause ({cause_error})"
                            ));
                        }
                    },
                },
                [p, c, ..] => (Place::parse(device, p)?, Some(cause_name(device, c)?)),
            };
            Ok(BreakKind::Fault {
                place: no_core("fault", p)?,
                cause,
            })
        }
        ["packet", rest @ ..] => {
            at_most(2, "packet [ENGINE | QUEUE]")?;
            Ok(BreakKind::Packet(no_core("packet", place(rest.first())?)?))
        }
        ["state", rest @ ..] => {
            at_most(2, "state [ENGINE | DIRECTION | QUEUE]")?;
            Ok(BreakKind::State(no_core("state", place(rest.first())?)?))
        }
        ["ring-id" | "ringid" | "ring_id", rest @ ..] => {
            at_most(2, "ring-id [ENGINE | QUEUE]")?;
            Ok(BreakKind::RingId(no_core("ring-id", place(rest.first())?)?))
        }
        ["race", ..] => {
            at_most(1, "race (it stops at every new race, wherever it is)")?;
            Ok(BreakKind::Race)
        }
        [w, ..] => Err(format!(
            "unknown breakpoint kind `{w}` (break {}){}",
            BREAK_KINDS.join(" | "),
            trace_format::closest_name(w, BREAK_KINDS.iter().copied())
                .map(|c| format!("; did you mean `{c}`?"))
                .unwrap_or_default()
        )),
    }
}

/// Parses what follows `watch`: `VALUE` (any change) or `VALUE OP NUMBER`.
///
/// # Errors
///
/// An unknown name, a malformed test.
pub fn parse_watch(device: &Device, text: &str) -> Result<BreakKind, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(
            "watch what? (watch VALUE [OP NUMBER]; e.g. watch eng0.m2s.q0.tdrhp, watch tpb0.sem.read[3] >= 16)"
                .into(),
        );
    }
    if split_test(text).is_some() {
        let t = Test::parse(device, text)?;
        return Ok(BreakKind::Watch {
            value: t.value,
            test: Some((t.cmp, t.rhs)),
        });
    }
    if text.contains(['=', '<', '>', '!']) {
        return Err(format!(
            "`{text}`: expected VALUE OP NUMBER with OP one of == != < <= > >="
        ));
    }
    Ok(BreakKind::Watch {
        value: Value::parse(device, text)?,
        test: None,
    })
}

fn parse_line(n: &str) -> Result<u32, String> {
    n.parse::<u32>()
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| format!("`{n}` is not a trace line number"))
}

/// `tpbN#K`.
fn parse_word(device: &Device, text: &str) -> Result<BreakKind, String> {
    let (core, seq) = text.split_once('#').ok_or_else(|| {
        format!("`{text}`: expected tpbN#K (core N's instruction word K, from 0)")
    })?;
    let tpb = match Place::parse(device, core)? {
        Place::Core(t) => t,
        _ => {
            return Err(format!(
                "`{core}` is not a core: an instruction word is tpbN#K"
            ));
        }
    };
    let seq = seq
        .parse::<u64>()
        .map_err(|_| format!("`{seq}` is not a word number (tpb{tpb}#0 is the core's first)"))?;
    Ok(BreakKind::Word { tpb, seq })
}

/// A cause as typed, checked against the maps ([`soc::exec::fault_cause`]).
fn cause_name(device: &Device, text: &str) -> Result<String, String> {
    soc::exec::fault_cause(device, text)
}

/// Whether a fault's cause (`SEC_A_INT_CAUSE.PREF_RING_ID`) is `want`: the
/// whole name or the bit after the dot, case-insensitive.
pub fn cause_matches(cause: &str, want: &str) -> bool {
    cause.eq_ignore_ascii_case(want)
        || cause
            .rsplit_once('.')
            .is_some_and(|(_, bit)| bit.eq_ignore_ascii_case(want))
}

/// One breakpoint or watchpoint.
#[derive(Clone, Debug)]
pub struct Breakpoint {
    /// Its number (from 1).
    pub id: u32,
    /// What it stops on.
    pub kind: BreakKind,
    /// Disabled ones do not stop.
    pub enabled: bool,
    /// Stops only when this holds.
    pub condition: Option<Test>,
    /// Hits to pass over before stopping.
    pub ignore: u64,
    /// Times it was hit (its condition holding), passed over or not.
    pub hits: u64,
    /// Watch: the value last seen.
    pub(crate) last: Option<u32>,
    /// One-shot kinds (a cycle, a word) that have fired.
    pub(crate) done: bool,
}

/// A breakpoint that fired: which, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The breakpoint's number.
    pub id: u32,
    /// `break …` / `watch …` as `info break` shows it.
    pub spec: String,
    /// What happened.
    pub why: String,
}

/// The table of breakpoints.
#[derive(Clone, Debug, Default)]
pub struct Breakpoints {
    list: Vec<Breakpoint>,
    next_id: u32,
}

impl Breakpoints {
    /// A copy whose one-shot breakpoints (cycles, words) and hit counts
    /// start over, for a replay from the start of the trace.
    pub(crate) fn rearmed(&self) -> Breakpoints {
        let mut c = self.clone();
        for b in &mut c.list {
            b.done = false;
            b.hits = 0;
        }
        c
    }

    /// Adds one; returns its number. A watch starts from the value now.
    pub fn add(&mut self, kind: BreakKind, device: &Device) -> u32 {
        self.next_id += 1;
        let last = match &kind {
            BreakKind::Watch { value, .. } => value.read(device),
            _ => None,
        };
        let done = matches!(kind, BreakKind::Cycle(c) if device.now().0 >= c);
        self.list.push(Breakpoint {
            id: self.next_id,
            kind,
            enabled: true,
            condition: None,
            ignore: 0,
            hits: 0,
            last,
            done,
        });
        self.next_id
    }

    /// Every breakpoint, by number.
    pub fn iter(&self) -> impl Iterator<Item = &Breakpoint> {
        self.list.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Breakpoint> {
        self.list.iter_mut()
    }

    /// Breakpoint `id`.
    pub fn get(&self, id: u32) -> Option<&Breakpoint> {
        self.list.iter().find(|b| b.id == id)
    }

    /// Breakpoint `id`, to change.
    ///
    /// # Errors
    ///
    /// `no breakpoint N`.
    pub fn get_mut(&mut self, id: u32) -> Result<&mut Breakpoint, String> {
        self.list
            .iter_mut()
            .find(|b| b.id == id)
            .ok_or_else(|| format!("no breakpoint {id} (info break lists them)"))
    }

    /// Deletes `ids`, or all when empty; returns how many went (one named
    /// twice counts once, docs/user-guide.md §12 "Breakpoints and
    /// watchpoints").
    ///
    /// # Errors
    ///
    /// An id that does not exist (nothing is deleted).
    pub fn delete(&mut self, ids: &[u32]) -> Result<usize, String> {
        if ids.is_empty() {
            let n = self.list.len();
            self.list.clear();
            return Ok(n);
        }
        for id in ids {
            self.get_mut(*id)?;
        }
        // The breakpoints deleted, each once however often it was named.
        let before = self.list.len();
        self.list.retain(|b| !ids.contains(&b.id));
        Ok(before - self.list.len())
    }

    /// Enables or disables `ids` (all when empty).
    ///
    /// # Errors
    ///
    /// An id that does not exist (nothing changes).
    pub fn set_enabled(&mut self, ids: &[u32], on: bool) -> Result<usize, String> {
        for id in ids {
            self.get_mut(*id)?;
        }
        let mut n = 0;
        for b in &mut self.list {
            if ids.is_empty() || ids.contains(&b.id) {
                b.enabled = on;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Whether an enabled breakpoint needs device events.
    pub fn need_events(&self) -> bool {
        self.list
            .iter()
            .any(|b| b.enabled && !b.done && b.kind.needs_events())
    }

    /// Whether an enabled `break race` exists.
    pub fn have_races(&self) -> bool {
        self.list
            .iter()
            .any(|b| b.enabled && b.kind == BreakKind::Race)
    }

    /// Whether an enabled watchpoint exists.
    pub fn have_watches(&self) -> bool {
        self.list
            .iter()
            .any(|b| b.enabled && matches!(b.kind, BreakKind::Watch { .. }))
    }

    /// The earliest cycle after `now` an enabled cycle breakpoint waits
    /// for.
    pub fn next_cycle(&self, now: u64) -> Option<u64> {
        self.list
            .iter()
            .filter(|b| b.enabled && !b.done)
            .filter_map(|b| match b.kind {
                BreakKind::Cycle(c) if c > now => Some(c),
                _ => None,
            })
            .min()
    }
}

impl Breakpoint {
    /// Counts a hit whose event happened: `Some` when it stops (enabled,
    /// its condition holds, no ignore count left).
    pub(crate) fn hit(&mut self, device: &Device, why: String) -> Option<Hit> {
        if !self.enabled {
            return None;
        }
        if let Some(c) = &self.condition
            && c.holds(device) != Some(true)
        {
            return None;
        }
        self.hits += 1;
        if self.ignore > 0 {
            self.ignore -= 1;
            return None;
        }
        Some(Hit {
            id: self.id,
            spec: format!("{} {}", self.kind.type_name(), self.kind.describe()),
            why,
        })
    }
}

/// `condition N EXPR`: the test, or `None` to remove it.
///
/// # Errors
///
/// A malformed test.
pub fn parse_condition(device: &Device, text: &str) -> Result<Option<Test>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    Test::parse(device, text).map(Some)
}

/// `ignore N COUNT`.
///
/// # Errors
///
/// COUNT is no number.
pub fn parse_count(text: &str) -> Result<u64, String> {
    parse_u64(text)
}

/// A breakpoint number.
///
/// # Errors
///
/// Not a number.
pub fn parse_id(text: &str) -> Result<u32, String> {
    parse_u32(text).map_err(|_| format!("`{text}` is not a breakpoint number"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn dev() -> Device {
        Device::trn2().unwrap()
    }

    #[test]
    fn specs_parse_as_an_engineer_spells_them() {
        let d = dev();
        for (text, shown) in [
            ("doorbell", "doorbell"),
            ("doorbell eng0.m2s.q0", "doorbell eng0.m2s.q0"),
            ("doorbell eng3", "doorbell eng3"),
            ("doorbell tpb0", "doorbell tpb0"),
            ("line 42", "line 42"),
            ("42", "line 42"),
            ("cycle 5000", "cycle 5000"),
            ("tpb0#3", "tpb0#3"),
            ("word tpb1#0", "tpb1#0"),
            ("fault", "fault"),
            ("fault eng3", "fault eng3"),
            ("fault PREF_RING_ID", "fault PREF_RING_ID"),
            // One bit of a wider field of the map, named as the engine
            // reports it.
            (
                "fault eng0 DATA_WR_AXI_RESPONSE",
                "fault eng0 DATA_WR_AXI_RESPONSE",
            ),
            (
                "fault eng3.m2s.q0 sec_a_int_cause.pref_ring_id",
                "fault eng3.m2s.q0 SEC_A_INT_CAUSE.PREF_RING_ID",
            ),
            ("packet eng0.s2m.q0", "packet eng0.s2m.q0"),
            ("state eng0.m2s", "state eng0.m2s"),
            ("ring-id", "ring-id"),
            ("race", "race"),
        ] {
            assert_eq!(parse_break(&d, text).unwrap().describe(), shown, "{text}");
        }
        for (text, says) in [
            ("dorbell", "did you mean `doorbell`?"),
            ("doorbell eng200", "no such instance (eng0..eng131)"),
            ("fault PREF_RING_IDX", "did you mean `PREF_RING_ID`?"),
            ("packet tpb0", "not a core"),
            ("tpb9#1", "no such instance"),
            ("line 0", "not a trace line"),
            ("cycle soon", "not a number"),
            ("race eng0", "too many words: break race"),
            ("rcae", "did you mean `race`?"),
        ] {
            let e = parse_break(&d, text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert_eq!(
            parse_watch(&d, "tpb0.sem.read[3] >= 16")
                .unwrap()
                .describe(),
            "tpb0.sem.read[3] >= 0x10"
        );
        assert!(parse_watch(&d, "tpb0.sem.read[3] =< 16").is_err());
    }

    #[test]
    fn conditions_and_ignore_counts_gate_hits() {
        let mut d = dev();
        let mut t = Breakpoints::default();
        let id = t.add(BreakKind::Packet(Place::Any), &d);
        let b = t.get_mut(id).unwrap();
        b.ignore = 1;
        assert!(b.hit(&d, "x".into()).is_none(), "ignored once");
        assert!(b.hit(&d, "x".into()).is_some());
        assert_eq!(b.hits, 2);
        b.condition = parse_condition(&d, "hbm0 == 7").unwrap();
        assert!(b.hit(&d, "x".into()).is_none(), "condition false");
        d.write_bytes(0, &[7, 0, 0, 0]).unwrap();
        let h = b.hit(&d, "why".into()).unwrap();
        assert_eq!(h.spec, "break packet");
        assert_eq!(h.why, "why");
        b.enabled = false;
        assert!(b.hit(&d, "x".into()).is_none());
        assert!(t.delete(&[99]).is_err());
        assert_eq!(t.delete(&[]).unwrap(), 1);
    }

    /// `delete 1 1 1` deletes one breakpoint and says so, as `disable 3 3`
    /// disables one.
    #[test]
    fn a_breakpoint_named_twice_counts_once() {
        let d = dev();
        let mut t = Breakpoints::default();
        let a = t.add(BreakKind::Packet(Place::Any), &d);
        let b = t.add(BreakKind::Race, &d);
        assert_eq!(t.set_enabled(&[b, b], false).unwrap(), 1);
        assert_eq!(t.delete(&[a, a, a]).unwrap(), 1);
        assert!(t.get(a).is_none());
        assert_eq!(t.delete(&[b, b]).unwrap(), 1);
        assert_eq!(t.iter().count(), 0);
    }
}
