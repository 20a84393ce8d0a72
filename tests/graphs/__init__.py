"""Small example graphs and annotated functions, by shape, shared across tests."""
