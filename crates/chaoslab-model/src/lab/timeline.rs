//! A scenario's timeline as it plays: its steps and captions on the
//! plan's clock, and where that clock stands against the lab's.
//!
//! The plan's clock runs with the lab's until a presenter takes it over:
//! `n` jumps it to the next step now (the rest of the timeline comes that
//! much sooner), `P` holds it (the load keeps running; nothing scripted
//! happens) and lets it go again (the rest comes that much later). Every
//! change is kept as a [`Segment`], so a window written on the plan's
//! clock (an expectation's `during: 5s..8s`) is found on the lab's clock
//! where the timeline actually passed it, and measured there.

use std::time::Duration;

use super::action::Action;

/// One stretch of the lab's clock over which the plan's clock ran (or
/// stood still) from a given point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Where it starts on the lab's clock.
    pub lab: Duration,
    /// Where the plan's clock stood then.
    pub plan: Duration,
    /// Whether the plan's clock runs over it (`false`: held).
    pub running: bool,
}

/// How the plan's clock went against the lab's: never empty, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Course(Vec<Segment>);

/// Segments kept at most (a presenter's jumps and holds): past it, the
/// newest change replaces the one before.
const MAX_SEGMENTS: usize = 4096;

impl Default for Course {
    fn default() -> Self {
        Course(vec![Segment {
            lab: Duration::ZERO,
            plan: Duration::ZERO,
            running: true,
        }])
    }
}

impl Course {
    fn last(&self) -> Segment {
        *self.0.last().expect("never empty")
    }

    /// The plan's clock at lab time `t`.
    pub fn plan_at(&self, t: Duration) -> Duration {
        let s = self
            .0
            .iter()
            .rev()
            .find(|s| s.lab <= t)
            .copied()
            .unwrap_or(self.0[0]);
        if s.running {
            s.plan + t.saturating_sub(s.lab)
        } else {
            s.plan
        }
    }

    /// The lab time at which the plan's clock reached `plan`: where a
    /// held stretch began, where a jump passed over it.
    pub fn lab_at(&self, plan: Duration) -> Duration {
        for (i, s) in self.0.iter().enumerate() {
            let end = self.0.get(i + 1).map(|n| n.lab);
            if s.plan >= plan {
                return s.lab;
            }
            if s.running {
                let reach = plan - s.plan;
                if end.is_none_or(|e| s.lab + reach < e) {
                    return s.lab + reach;
                }
            }
        }
        let s = self.last();
        s.lab + plan.saturating_sub(s.plan)
    }

    fn push(&mut self, s: Segment) {
        if self.0.len() >= MAX_SEGMENTS {
            self.0.pop();
        }
        self.0.push(s);
    }

    /// Whether the plan's clock is held.
    pub fn held(&self) -> bool {
        !self.last().running
    }

    /// Holds the plan's clock at lab time `t` (`on`), or lets it go.
    pub fn hold(&mut self, t: Duration, on: bool) {
        if on == self.held() {
            return;
        }
        let plan = self.plan_at(t);
        self.push(Segment {
            lab: t,
            plan,
            running: !on,
        });
    }

    /// Moves the plan's clock to `plan` at lab time `t` (forward only),
    /// held or running as it was.
    pub fn jump(&mut self, t: Duration, plan: Duration) {
        if plan <= self.plan_at(t) {
            return;
        }
        let running = !self.held();
        self.push(Segment {
            lab: t,
            plan,
            running,
        });
    }

    /// Every change, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }
}

/// What the timeline says to do at a time.
#[derive(Debug, Clone, PartialEq)]
pub enum Cue {
    /// Apply an action (boxed: a policy's fields are large beside a
    /// caption).
    Step(Box<Action>),
    /// Show a caption.
    Say(String),
}

/// A scenario's timeline as it plays.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Cues on the plan's clock, in order (same time: as given).
    cues: Vec<(Duration, Cue)>,
    next: usize,
    course: Course,
    caption: Option<(Duration, String)>,
}

/// Where the timeline stands, for the front ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineView {
    /// The plan's clock now.
    pub now: Duration,
    /// Where the steps are on the plan's clock.
    pub marks: Vec<Duration>,
    /// How many cues have played, of all.
    pub played: usize,
    /// Every cue.
    pub total: usize,
    /// When the next cue comes, on the plan's clock.
    pub next: Option<Duration>,
    /// Held by the presenter.
    pub held: bool,
    /// The newest caption that has played, with its time.
    pub caption: Option<(Duration, String)>,
}

impl Timeline {
    /// A timeline of `steps` and `captions` (plan's clock).
    pub fn new(steps: Vec<(Duration, Action)>, captions: Vec<(Duration, String)>) -> Timeline {
        // Captions first at a shared time: the words come with the change.
        let mut cues: Vec<(Duration, Cue)> = captions
            .into_iter()
            .map(|(t, s)| (t, Cue::Say(s)))
            .chain(steps.into_iter().map(|(t, a)| (t, Cue::Step(Box::new(a)))))
            .collect();
        cues.sort_by_key(|(t, _)| *t);
        Timeline {
            cues,
            next: 0,
            course: Course::default(),
            caption: None,
        }
    }

    /// The plan's clock at lab time `t`.
    pub fn plan_at(&self, t: Duration) -> Duration {
        self.course.plan_at(t)
    }

    /// The actions due at lab time `t`, in order; the captions due are
    /// taken in passing (the newest is [`TimelineView::caption`]).
    pub fn due(&mut self, t: Duration) -> Vec<Action> {
        let now = self.course.plan_at(t);
        let mut out = vec![];
        while let Some((at, cue)) = self.cues.get(self.next) {
            if *at > now {
                break;
            }
            match cue {
                Cue::Step(a) => out.push((**a).clone()),
                Cue::Say(s) => self.caption = Some((*at, s.clone())),
            }
            self.next += 1;
        }
        out
    }

    /// Jumps the plan's clock to the next cue now (lab time `t`); its
    /// actions are then [`Timeline::due`].
    pub fn skip_to_next(&mut self, t: Duration) {
        if let Some((at, _)) = self.cues.get(self.next) {
            self.course.jump(t, *at);
        }
    }

    /// Holds the plan's clock (`on`) or lets it run again, at lab time `t`.
    pub fn hold(&mut self, t: Duration, on: bool) {
        self.course.hold(t, on);
    }

    /// How the plan's clock went.
    pub fn course(&self) -> &Course {
        &self.course
    }

    /// Where it stands at lab time `t`.
    pub fn view(&self, t: Duration) -> TimelineView {
        TimelineView {
            now: self.plan_at(t),
            marks: self
                .cues
                .iter()
                .filter(|(_, c)| matches!(c, Cue::Step(_)))
                .map(|(t, _)| *t)
                .collect(),
            played: self.next,
            total: self.cues.len(),
            next: self.cues.get(self.next).map(|(t, _)| *t),
            held: self.course.held(),
            caption: self.caption.clone(),
        }
    }

    /// Whether it has any cue at all.
    pub fn is_empty(&self) -> bool {
        self.cues.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn the_plan_runs_with_the_lab_until_held_or_jumped() {
        let mut c = Course::default();
        assert_eq!(c.plan_at(s(3.0)), s(3.0));
        c.hold(s(4.0), true);
        assert_eq!(c.plan_at(s(6.0)), s(4.0));
        c.hold(s(7.0), false); // held 3 s
        assert_eq!(c.plan_at(s(8.0)), s(5.0));
        c.jump(s(9.0), s(10.0)); // 4 s sooner
        assert_eq!(c.plan_at(s(9.5)), s(10.5));
        // Back to the lab's clock: where the plan reached each time.
        assert_eq!(c.lab_at(s(2.0)), s(2.0));
        assert_eq!(c.lab_at(s(4.0)), s(4.0)); // where the hold began
        assert_eq!(c.lab_at(s(5.0)), s(8.0));
        assert_eq!(c.lab_at(s(7.0)), s(9.0)); // jumped over: the jump
        assert_eq!(c.lab_at(s(12.0)), s(11.0));
        // A jump backwards, or a second hold, changes nothing.
        c.jump(s(10.0), s(1.0));
        c.hold(s(10.0), false);
        assert_eq!(c.segments().len(), 4);
    }

    #[test]
    fn cues_play_in_order_and_next_brings_the_next_one_now() {
        let mut tl = Timeline::new(
            vec![(s(2.0), Action::Reset), (s(5.0), Action::Pause(true))],
            vec![(s(2.0), "two".into()), (s(9.0), "nine".into())],
        );
        assert!(tl.due(s(1.0)).is_empty());
        assert_eq!(tl.due(s(2.1)), vec![Action::Reset]);
        assert_eq!(tl.view(s(2.1)).caption, Some((s(2.0), "two".into())));
        tl.skip_to_next(s(3.0));
        assert_eq!(tl.due(s(3.0)), vec![Action::Pause(true)]);
        let v = tl.view(s(3.0));
        assert_eq!(
            (v.now, v.next, v.played, v.total),
            (s(5.0), Some(s(9.0)), 3, 4)
        );
        assert_eq!(v.marks, vec![s(2.0), s(5.0)]);
        tl.hold(s(3.0), true);
        assert!(tl.due(s(30.0)).is_empty(), "held: nothing plays");
        assert!(tl.view(s(30.0)).held);
        tl.hold(s(30.0), false);
        assert!(tl.due(s(33.9)).is_empty());
        assert!(tl.due(s(34.0)).is_empty()); // a caption only
        assert_eq!(tl.view(s(34.0)).caption.unwrap().1, "nine");
    }
}
