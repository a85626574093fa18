//! Vector clocks over the agents in use (docs/races.md §Happens-before).

/// One clock component per agent, by agent id; missing components are 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VClock(Vec<u32>);

impl VClock {
    /// Component `agent`.
    pub(crate) fn get(&self, agent: usize) -> u32 {
        self.0.get(agent).copied().unwrap_or(0)
    }

    /// Sets component `agent`.
    pub(crate) fn set(&mut self, agent: usize, value: u32) {
        if self.0.len() <= agent {
            self.0.resize(agent + 1, 0);
        }
        self.0[agent] = value;
    }

    /// Advances component `agent` by one; returns the new value.
    pub(crate) fn tick(&mut self, agent: usize) -> u32 {
        let v = self.get(agent).saturating_add(1);
        self.set(agent, v);
        v
    }

    /// Component-wise maximum with `other`.
    pub(crate) fn join(&mut self, other: &VClock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(*b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_takes_the_maximum_and_grows() {
        let mut a = VClock::default();
        a.set(0, 3);
        let mut b = VClock::default();
        b.set(0, 1);
        b.set(2, 5);
        a.join(&b);
        assert_eq!((a.get(0), a.get(1), a.get(2), a.get(9)), (3, 0, 5, 0));
        assert_eq!(a.tick(1), 1);
        assert_eq!(a.get(1), 1);
    }
}
