"""The example project's site package: settings and URLs."""
