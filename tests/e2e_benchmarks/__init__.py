"""Suite for the asv end-to-end test: measures `slowlib` from the throwaway repository."""
