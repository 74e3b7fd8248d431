"""Text views every family of checks reads alike (what is invisible, how text reads when it is
drawn): shared by the stream checks, the message checks and the tool rules."""
