//! A throwaway PostgreSQL cluster for tests, and a database per test (to be written).
