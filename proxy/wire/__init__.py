"""One module per wire format. Only these modules parse or render provider JSON."""
