"""The `segment_seq` management command and the helpers that render what it prints."""
