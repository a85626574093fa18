//! The device's event record (docs/user-guide.md §8 "Events", §12
//! "Views"): the side effects of register accesses and what the engines
//! and firmware did, kept until taken or handed to a sink as the run goes,
//! each with its cycle.

use super::{Device, DeviceEvent};

/// Receives the device's events as a run produces them
/// ([`Device::set_event_sink`]).
pub type EventSink = Box<dyn FnMut(Vec<DeviceEvent>) + Send>;

/// Engine steps between two hand-overs to the event sink (a power of two).
pub(super) const EVENT_FLUSH_STEPS: u64 = 1 << 12;

pub(super) struct SinkSlot(pub(super) Option<EventSink>);

impl std::fmt::Debug for SinkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(sink)"
        } else {
            "None"
        })
    }
}

impl DeviceEvent {
    /// The cycle the event happened at.
    pub fn cycle(&self) -> u64 {
        match self {
            DeviceEvent::Doorbell { cycle, .. }
            | DeviceEvent::Pulse { cycle, .. }
            | DeviceEvent::Semaphore { cycle, .. }
            | DeviceEvent::IgnoredWrite { cycle, .. } => *cycle,
            DeviceEvent::Firmware(e) => e.at,
            DeviceEvent::Engine(e) => e.cycle,
        }
    }
}

impl Device {
    /// Side effects recorded so far.
    pub fn events(&self) -> &[DeviceEvent] {
        &self.fabric.events
    }

    /// Hands recorded events to `sink` as the device runs (every few
    /// thousand engine steps, and at [`Device::flush_events`]) instead of
    /// keeping them until [`Device::take_events`]: a consumer that streams
    /// them keeps memory flat however long the run (docs/user-guide.md
    /// §Output). `None` keeps them again.
    pub fn set_event_sink(&mut self, sink: Option<EventSink>) {
        self.flush_events();
        self.sink = SinkSlot(sink);
    }

    /// Keeps the events in the order the device produced them, by cycle
    /// ([`DeviceEvent::cycle`]): each engine step's events follow it at
    /// once, behind the register-side events of that step, instead of
    /// joining engine by engine when the events are taken. Whatever how
    /// often they are taken (a debugger pausing every step or running to a
    /// breakpoint), the events then come in one order (docs/user-guide.md
    /// §12 "Views"). Off by default: the run output lists a statement's
    /// register-side events first (docs/user-guide.md §8).
    pub fn set_events_in_step_order(&mut self, on: bool) {
        self.fabric.step_order = on;
    }

    /// In step order ([`Device::set_events_in_step_order`]), engine `id`'s
    /// recorded events join the device's after those recorded so far.
    pub(super) fn collect_engine_log(&mut self, id: u16) {
        if self.fabric.step_order
            && let Some(Some(e)) = self.engines.get_mut(usize::from(id))
        {
            self.fabric
                .events
                .extend(e.drain_log().map(DeviceEvent::Engine));
        }
    }

    /// Whether an event sink is set.
    pub fn has_event_sink(&self) -> bool {
        self.sink.0.is_some()
    }

    /// Hands the events recorded so far to the sink, if one is set.
    pub fn flush_events(&mut self) {
        if self.sink.0.is_none() {
            return;
        }
        let events = self.take_events();
        if !events.is_empty()
            && let Some(sink) = self.sink.0.as_mut()
        {
            sink(events);
        }
    }

    /// Takes the recorded side effects.
    pub fn take_events(&mut self) -> Vec<DeviceEvent> {
        for e in self.engines.iter_mut().flatten() {
            let log = e.take_log();
            self.fabric
                .events
                .extend(log.into_iter().map(DeviceEvent::Engine));
        }
        std::mem::take(&mut self.fabric.events)
    }
}
