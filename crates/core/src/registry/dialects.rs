//! The dialect side: which agent CLI a session's lines are in ([`crate::dialect`]), for the
//! sessions whose host gave one ([`SessionConfig::with_dialect`](crate::SessionConfig)). Kept
//! in a side table by slot, as the trees are: a session's hot state has one bit for it
//! ([`Host::Dialect`]), cleared once its lines are confirmed Claude Code's, so a Claude Code
//! session reads every line after its first decisive one exactly as one registered without a
//! dialect, and a registry without dialect sessions keeps nothing here.

use crate::classify::Class;
use crate::dialect::{Dialect, SessionDialect};
use crate::event::SessionId;
use crate::session::Host;
use crate::view::LineView;

use super::Registry;

/// The dialects of the sessions that were given one, by slot (a slot that never held one is
/// not in it; a stale entry is reset when its slot's next dialect session registers).
#[derive(Debug, Default)]
pub(super) struct Dialects(Vec<SessionDialect>);

impl Dialects {
    /// The session in `slot` expects `dialect`.
    pub(super) fn start(&mut self, slot: u32, dialect: Dialect) {
        let i = slot as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, SessionDialect::fixed(Dialect::Claude));
        }
        self.0[i] = SessionDialect::expect(dialect);
    }
}

impl Registry {
    /// The class of `view`, a line of the dialect session in `slot` (with [`Host::Dialect`]):
    /// a decisive line settles its dialect first; `claude` is the line's Claude Code class,
    /// already made. A session confirmed Claude Code's leaves the side table.
    pub(super) fn dialect_class(&mut self, slot: u32, view: &LineView<'_>, claude: Class) -> Class {
        let Some(d) = self.dialects.0.get_mut(slot as usize) else {
            return claude;
        };
        d.confirm(view);
        match d.dialect() {
            Dialect::Claude => {
                if d.is_confirmed() {
                    self.slots[slot as usize].host.remove(Host::Dialect);
                }
                claude
            }
            other => other.classify(view),
        }
    }

    /// The dialect of session `id`'s lines as of now (see [`SessionConfig::with_dialect`]:
    /// Claude Code's unless its host gave another or its lines chose one). `None` for an
    /// unknown id.
    ///
    /// [`SessionConfig::with_dialect`]: crate::SessionConfig::with_dialect
    pub fn dialect(&self, id: SessionId) -> Option<Dialect> {
        let slot = self.slot_of(id)?;
        Some(self.dialect_of(slot))
    }

    /// A live slot's dialect.
    pub(super) fn dialect_of(&self, slot: u32) -> Dialect {
        if !self.session(slot).host.has(Host::Dialect) {
            return Dialect::Claude;
        }
        self.dialects
            .0
            .get(slot as usize)
            .map_or(Dialect::Claude, SessionDialect::dialect)
    }
}
