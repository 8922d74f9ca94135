// The second-opinion project runs its specs on mongo-java-server instead of the run's main MongoDB server, which
// stays reachable for the spec that compares the two.
process.env.TEST_MAIN_MONGO_URL = process.env.TEST_MONGO_URL;
process.env.TEST_MONGO_URL = process.env.TEST_SECOND_MONGO_URL;
process.env.TEST_MONGO_KIND = process.env.TEST_SECOND_MONGO_KIND;
