"""project: what is tracked and where: its commits, the asv configuration derived for it, the embedded
example library (tensorlib/), and the locked output and environment folders a command works in."""
