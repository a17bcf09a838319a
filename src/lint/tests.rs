//! The storm map against what the mechanism gives by hand.
