//! Bad topologies: exit status 2 and a message that says where and what.
