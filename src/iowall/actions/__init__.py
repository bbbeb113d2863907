"""What a command does, below its face: each module is the one call a `cli/` command (or a
`web/` page) makes after parsing — run a target, gate, a kernel A/B, a flame graph — so that
no command module imports another (docs/architecture.md, "Commands are parse, one call,
emit"). It may use the runners, the store and the renderers; it prints nothing but what it
is asked to say."""
