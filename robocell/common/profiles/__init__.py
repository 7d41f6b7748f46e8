"""Robot profiles: one declarative TOML file per robot (see docs/profiles.md)."""
