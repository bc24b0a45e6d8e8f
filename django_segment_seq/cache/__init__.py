"""The per-process cache: ranges handed out from memory, fetched ahead in the background, sized to demand,
given back at exit, with one event per fetch for whoever listens."""
