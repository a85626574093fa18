//! The wait-for graph (docs/races.md §Deadlocks): when the device went
//! idle or stalled with work pending, or a `wait` failed, who waits on
//! what — the semaphore and the value it needs, the value now — and which
//! agents could still change it. A wait nothing can change is a deadlock.

use serde::Serialize;

use super::Device;

/// Who waits on what at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WaitGraph {
    /// The cycle.
    pub cycle: u64,
    /// Why the graph was taken (`wait at line 30 failed`, `end of run`).
    pub when: String,
    /// Some wait can never end.
    pub deadlock: bool,
    /// Every wait.
    pub waits: Vec<WaitNode>,
}

/// One waiter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WaitNode {
    /// The word, call or host statement that waits (`tpb0#1 DIRECT2D
    /// (line 23)`, `host wait (line 30)`).
    pub waiter: String,
    /// What it waits on (`tpb0.sem[6]`, `eng0.q0 completions`, `tpb0#1`
    /// for a word behind it in the core's in-order queue).
    pub on: String,
    /// The condition (`WAIT_FOR_SEM_GE_IMM 1`, `== 0x1`).
    pub needs: String,
    /// The value now, when a value is waited on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<u32>,
    /// The agents that could still change it (none: deadlocked).
    pub could_change: Vec<String>,
    /// Nothing that can still run can end this wait.
    pub deadlocked: bool,
}

impl WaitGraph {
    /// The graph as text lines.
    pub fn to_text(&self) -> String {
        let dead = self.waits.iter().filter(|w| w.deadlocked).count();
        let mut out = format!(
            "wait-for graph at cycle {} ({}): {}\n",
            self.cycle,
            self.when,
            if self.deadlock {
                format!("DEADLOCK, {dead} wait(s) nothing can end")
            } else {
                "no deadlock".to_string()
            }
        );
        for w in &self.waits {
            let value = w.value.map_or(String::new(), |v| format!(", now {v:#x}"));
            let who = if w.could_change.is_empty() {
                "nothing can change it".to_string()
            } else {
                format!("could change: {}", w.could_change.join(", "))
            };
            out.push_str(&format!(
                "  {} waits on {} {}{value}; {who}{}\n",
                w.waiter,
                w.on,
                w.needs,
                if w.deadlocked { ": DEADLOCK" } else { "" }
            ));
        }
        out
    }

    /// The graph in Graphviz DOT: waiters and what they wait on, an edge
    /// from each waiter to its resource and from the resource to each
    /// agent that could change it; deadlocked waiters in red.
    pub fn to_dot(&self) -> String {
        let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut out = String::from("digraph waitfor {\n  rankdir=LR;\n  node [shape=box];\n");
        out.push_str(&format!(
            "  label={};\n",
            q(&format!("cycle {}: {}", self.cycle, self.when))
        ));
        let mut resources: std::collections::BTreeSet<String> =
            self.waits.iter().map(|w| w.waiter.clone()).collect();
        for w in &self.waits {
            let colour = if w.deadlocked { ", color=red" } else { "" };
            out.push_str(&format!("  {} [shape=box{colour}];\n", q(&w.waiter)));
            if resources.insert(w.on.clone()) {
                out.push_str(&format!("  {} [shape=ellipse];\n", q(&w.on)));
            }
            let value = w.value.map_or(String::new(), |v| format!(" (now {v:#x})"));
            out.push_str(&format!(
                "  {} -> {} [label={}{colour}];\n",
                q(&w.waiter),
                q(&w.on),
                q(&format!("{}{value}", w.needs))
            ));
        }
        for w in &self.waits {
            for c in w.could_change.iter().filter(|c| **c != w.on) {
                out.push_str(&format!(
                    "  {} -> {} [style=dashed, label=\"could change\"];\n",
                    q(&w.on),
                    q(c)
                ));
            }
        }
        out.push_str("}\n");
        out
    }
}

/// A host `wait` that failed: what it waited on.
#[derive(Clone, Debug)]
pub struct HostWait {
    /// `host wait (line 30)`.
    pub label: String,
    /// The address waited on.
    pub addr: u64,
    /// The condition as text (`== 0x1`).
    pub needs: String,
}

/// A semaphore of core `tpb`.
fn sem_name(tpb: u8, idx: u8) -> String {
    format!("tpb{tpb}.sem[{idx}]")
}

impl Device {
    /// The wait-for graph now, or `None` when nothing waits (no core has
    /// work left and no host wait is given).
    pub fn wait_graph(&self, when: &str, host: Option<&HostWait>) -> Option<WaitGraph> {
        struct Raw {
            node: WaitNode,
            /// Waiter ids (indices into the node list) among `could_change`,
            /// and whether an engine is among them.
            by_waiters: Vec<usize>,
            by_other: bool,
        }
        let mut raw: Vec<Raw> = Vec::new();
        // Waiter labels of every pending word, per core, and which
        // semaphores each would still write.
        let busy_engines: Vec<String> = self
            .engines()
            .filter(|e| !e.is_idle())
            .map(|e| format!("eng{} (DMA work pending)", e.id()))
            .collect();
        let mut writers: Vec<(u8, u8, String)> = Vec::new(); // (core, sem, waiter)
        let mut labels: Vec<String> = Vec::new();
        let cores: Vec<(u8, Vec<q7::PendingWork>)> = self
            .cores()
            .map(|c| (c.tpb(), c.pending()))
            .filter(|(_, p)| !p.is_empty())
            .collect();
        let label = |t: u8, p: &q7::PendingWork| {
            format!("tpb{t}#{} {} ({})", p.inst.seq, p.kind, p.inst.source)
        };
        for (t, pending) in &cores {
            for p in pending {
                for &s in &p.updates {
                    writers.push((*t, s, label(*t, p)));
                }
            }
        }
        let peek = |addr: u64| -> Option<u32> {
            match self.reg_target(addr) {
                Ok(Some(t)) => self.peek_reg(t),
                _ => None,
            }
        };
        for (t, pending) in &cores {
            let Some(core) = self.core(*t) else { continue };
            let layout = core.layout();
            let mut front: Option<String> = None;
            for p in pending {
                let me = label(*t, p);
                labels.push(me.clone());
                if p.in_flight {
                    // Its descriptors are posted: the engines move them and
                    // the firmware's polls see them done (a poll for a
                    // completion that cannot come is the stall report's,
                    // docs/firmware.md §Stalls).
                    let mut could = busy_engines.clone();
                    could.push(format!("tpb{t} firmware (completion polls)"));
                    raw.push(Raw {
                        node: WaitNode {
                            waiter: me.clone(),
                            on: "its DMA completions".into(),
                            needs: "every descriptor done".into(),
                            value: None,
                            could_change: could,
                            deadlocked: false,
                        },
                        by_waiters: Vec::new(),
                        by_other: true,
                    });
                    continue;
                }
                match (&front, p.gate) {
                    (None, Some((sem, mode, v))) => {
                        let from_reg = mode.ends_with("REG");
                        let threshold = if from_reg {
                            peek(layout.reg((v & 63) as u8)).unwrap_or(0)
                        } else {
                            v
                        };
                        let mut could: Vec<String> = writers
                            .iter()
                            .filter(|(c, s, w)| *c == *t && *s == sem && *w != me)
                            .map(|(_, _, w)| w.clone())
                            .collect();
                        // Words behind this one on its core cannot run first.
                        let behind: Vec<String> = pending
                            .iter()
                            .filter(|o| !o.in_flight && o.inst.seq > p.inst.seq)
                            .map(|o| label(*t, o))
                            .collect();
                        could.retain(|w| !behind.contains(w));
                        let n_words = could.len();
                        could.extend(busy_engines.iter().cloned());
                        raw.push(Raw {
                            node: WaitNode {
                                waiter: me.clone(),
                                on: sem_name(*t, sem),
                                needs: format!("{mode} {threshold:#x}"),
                                value: peek(layout.sem_read(sem)),
                                could_change: could,
                                deadlocked: false,
                            },
                            by_waiters: Vec::new(),
                            by_other: !busy_engines.is_empty(),
                        });
                        let _ = n_words;
                        front = Some(me);
                    }
                    (None, None) => {
                        front = Some(me);
                    }
                    (Some(f), _) => {
                        raw.push(Raw {
                            node: WaitNode {
                                waiter: me.clone(),
                                on: f.clone(),
                                needs: "to issue first (in-order queue)".into(),
                                value: None,
                                could_change: vec![f.clone()],
                                deadlocked: false,
                            },
                            by_waiters: Vec::new(),
                            by_other: false,
                        });
                    }
                }
            }
        }
        if let Some(h) = host {
            let value = peek(h.addr).or_else(|| {
                let mut b = [0u8; 4];
                self.read_bytes(h.addr, &mut b)
                    .ok()
                    .map(|()| u32::from_le_bytes(b))
            });
            // A semaphore of a core: the words that write it.
            let sem = self.cores().find_map(|c| {
                (0..=255u8)
                    .find(|&i| c.layout().sem_read(i) == h.addr)
                    .map(|i| (c.tpb(), i))
            });
            let mut could: Vec<String> = match sem {
                Some((t, i)) => writers
                    .iter()
                    .filter(|(c, s, _)| *c == t && *s == i)
                    .map(|(_, _, w)| w.clone())
                    .collect(),
                // Memory or another register: any pending word could.
                None => labels.clone(),
            };
            could.extend(busy_engines.iter().cloned());
            raw.push(Raw {
                node: WaitNode {
                    waiter: h.label.clone(),
                    on: crate::describe::symbolic(self, h.addr),
                    needs: h.needs.clone(),
                    value,
                    could_change: could,
                    deadlocked: false,
                },
                by_waiters: Vec::new(),
                by_other: !busy_engines.is_empty(),
            });
        }
        if raw.is_empty() {
            return None;
        }
        // Which waiters each wait depends on.
        let names: Vec<String> = raw.iter().map(|r| r.node.waiter.clone()).collect();
        for r in &mut raw {
            r.by_waiters = r
                .node
                .could_change
                .iter()
                .filter_map(|c| names.iter().position(|n| n == c))
                .collect();
            // A changer that is pending but waits on nothing (a word in
            // flight is a waiter too) keeps the wait alive.
            r.by_other |= r
                .node
                .could_change
                .iter()
                .any(|c| !names.contains(c) && !c.starts_with("eng"));
        }
        // Alive: something outside the waiters can end it, or a waiter
        // that could is alive (the least fixpoint from "all dead", so that
        // a cycle of waits with no outside help stays dead).
        let mut alive = vec![false; raw.len()];
        loop {
            let mut changed = false;
            for i in 0..raw.len() {
                if alive[i] {
                    continue;
                }
                if raw[i].by_other || raw[i].by_waiters.iter().any(|&j| alive[j]) {
                    alive[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let dead: Vec<bool> = alive.iter().map(|a| !a).collect();
        let waits: Vec<WaitNode> = raw
            .into_iter()
            .zip(&dead)
            .map(|(r, &d)| WaitNode {
                deadlocked: d,
                ..r.node
            })
            .collect();
        Some(WaitGraph {
            cycle: self.now().0,
            when: when.to_string(),
            deadlock: dead.iter().any(|&d| d),
            waits,
        })
    }
}
