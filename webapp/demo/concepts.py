"""A small, real slice of MEDIC for the demo: disease concepts with MeSH ids, synonyms, parents, slim types.

Written by the project (not copied from a data set) so that a fresh checkout can show real data at once.
"""

from __future__ import annotations

# (concept id, preferred name, synonyms, parents, slim mappings, definition)
DemoConcept = tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...], str]

CV = "Cardiovascular disease"
NS = "Nervous system disease"
NEO = "Neoplasm"
INF = "Infection"
RESP = "Respiratory tract disease"
DIG = "Digestive system disease"
MENT = "Mental disorder"
MET = "Metabolic disease"
MSK = "Musculoskeletal disease"
IMM = "Immune system disease"
GEN = "Genetic disease (inborn)"
URO = "Urologic disease"
ENDO = "Endocrine system disease"
BLOOD = "Blood disease"

CONCEPTS: list[DemoConcept] = [
    ("MESH:C", "Diseases", (), (), (), "The root of the disease hierarchy."),
    ("MESH:D002318", "Cardiovascular Diseases", ("Cardiovascular disorder", "CVD"), ("MESH:C",), (CV,), "Pathological conditions involving the cardiovascular system."),
    ("MESH:D006331", "Heart Diseases", ("Cardiac disease", "Heart disorder"), ("MESH:D002318",), (CV,), "Pathological conditions involving the heart."),
    ("MESH:D014652", "Vascular Diseases", ("Vascular disorder",), ("MESH:D002318",), (CV,), "Pathological processes involving any of the blood vessels."),
    ("MESH:D006973", "Hypertension", ("High blood pressure", "Arterial hypertension", "HTN"), ("MESH:D014652",), (CV,), "Persistently high systemic arterial blood pressure."),
    ("MESH:D017202", "Myocardial Ischemia", ("Ischemic heart disease", "IHD"), ("MESH:D006331", "MESH:D014652"), (CV,), "A disorder of cardiac function caused by insufficient blood flow to the muscle tissue of the heart."),
    ("MESH:D009203", "Myocardial Infarction", ("Heart attack", "MI", "Myocardial infarct", "Cardiac infarction"), ("MESH:D017202",), (CV,), "Necrosis of the myocardium caused by an obstruction of the blood supply to the heart."),
    ("MESH:D006333", "Heart Failure", ("Cardiac failure", "Congestive heart failure", "CHF"), ("MESH:D006331",), (CV,), "A heterogeneous condition in which the heart is unable to pump out sufficient blood."),
    ("MESH:D001145", "Arrhythmias, Cardiac", ("Cardiac arrhythmia", "Heart rhythm disorder"), ("MESH:D006331",), (CV,), "Any disturbances of the normal rhythmic beating of the heart."),
    ("MESH:D001281", "Atrial Fibrillation", ("AF", "Auricular fibrillation", "AFib"), ("MESH:D001145",), (CV,), "Abnormal cardiac rhythm characterized by rapid, uncoordinated firing of electrical impulses in the upper chambers of the heart."),
    ("MESH:D009369", "Neoplasms", ("Tumor", "Tumour", "Cancer", "Neoplasm", "Malignancy"), ("MESH:C",), (NEO,), "New abnormal growth of tissue."),
    ("MESH:D009371", "Neoplasms by Site", ("Site-specific neoplasm",), ("MESH:D009369",), (NEO,), "Neoplasms classified by the site where they arise."),
    ("MESH:D001943", "Breast Neoplasms", ("Breast cancer", "Breast tumor", "Mammary carcinoma", "Breast carcinoma"), ("MESH:D009371",), (NEO,), "Tumors or cancer of the human breast."),
    ("MESH:D010051", "Ovarian Neoplasms", ("Ovarian cancer", "Ovarian tumor", "Ovary neoplasm"), ("MESH:D009371",), (NEO, ENDO), "Tumors or cancer of the ovary."),
    ("MESH:D015179", "Colorectal Neoplasms", ("Colorectal cancer", "CRC", "Colorectal carcinoma"), ("MESH:D009371",), (NEO, DIG), "Tumors or cancer of the colon or the rectum or both."),
    ("MESH:D003110", "Colonic Neoplasms", ("Colon cancer", "Colon carcinoma", "Cancer of the colon"), ("MESH:D015179",), (NEO, DIG), "Tumors or cancer of the colon."),
    ("MESH:D008175", "Lung Neoplasms", ("Lung cancer", "Pulmonary neoplasm", "Lung carcinoma"), ("MESH:D009371",), (NEO, RESP), "Tumors or cancer of the lung."),
    ("MESH:D002289", "Carcinoma, Non-Small-Cell Lung", ("Non-small cell lung cancer", "NSCLC"), ("MESH:D008175",), (NEO, RESP), "A heterogeneous aggregate of at least three distinct histological types of lung cancer."),
    ("MESH:D030342", "Genetic Diseases, Inborn", ("Inherited disease", "Hereditary disease", "Genetic disorder"), ("MESH:C",), (GEN,), "Diseases that are caused by genetic mutations present during embryo or fetal development."),
    ("MESH:D003550", "Cystic Fibrosis", ("Mucoviscidosis", "CF", "Fibrocystic disease of pancreas"), ("MESH:D030342",), (GEN, RESP, DIG), "An autosomal recessive genetic disease of the exocrine glands."),
    ("MESH:D009422", "Nervous System Diseases", ("Neurological disorder", "Neurologic disease"), ("MESH:C",), (NS,), "Diseases of the central and peripheral nervous system."),
    ("MESH:D006816", "Huntington Disease", ("Huntington's chorea", "Huntington's disease", "HD"), ("MESH:D030342", "MESH:D009422"), (GEN, NS), "A familial disorder inherited as an autosomal dominant trait and characterized by chorea and dementia."),
    ("MESH:D003704", "Dementia", ("Dementias",), ("MESH:D009422",), (NS, MENT), "An acquired organic mental disorder with loss of intellectual abilities."),
    ("MESH:D000544", "Alzheimer Disease", ("Alzheimer's disease", "AD", "Senile dementia of the Alzheimer type"), ("MESH:D003704",), (NS, MENT), "A degenerative disease of the brain characterized by the insidious onset of dementia."),
    ("MESH:D010300", "Parkinson Disease", ("Parkinson's disease", "Paralysis agitans", "PD"), ("MESH:D009422",), (NS,), "A progressive, degenerative neurologic disease characterized by tremor and rigidity."),
    ("MESH:D004827", "Epilepsy", ("Seizure disorder", "Epileptic syndrome"), ("MESH:D009422",), (NS,), "A disorder characterized by recurrent episodes of paroxysmal brain dysfunction."),
    ("MESH:D009103", "Multiple Sclerosis", ("MS", "Disseminated sclerosis"), ("MESH:D009422",), (NS, IMM), "An autoimmune disorder mainly affecting young adults and characterized by destruction of myelin."),
    ("MESH:D008881", "Migraine Disorders", ("Migraine", "Migraine headache"), ("MESH:D009422",), (NS,), "A class of disorders characterized by recurrent headaches."),
    ("MESH:D020521", "Stroke", ("Cerebrovascular accident", "CVA", "Brain attack"), ("MESH:D009422", "MESH:D014652"), (NS, CV), "A group of pathological conditions characterized by sudden, non-convulsive loss of neurological function."),
    ("MESH:D012140", "Respiratory Tract Diseases", ("Respiratory disease",), ("MESH:C",), (RESP,), "Diseases involving the respiratory system."),
    ("MESH:D008171", "Lung Diseases", ("Pulmonary disease", "Lung disorder"), ("MESH:D012140",), (RESP,), "Pathological processes involving any part of the lung."),
    ("MESH:D001249", "Asthma", ("Bronchial asthma", "Asthmatic"), ("MESH:D008171",), (RESP, IMM), "A form of bronchial disorder with three distinct components: airway hyper-responsiveness, inflammation and obstruction."),
    ("MESH:D029424", "Pulmonary Disease, Chronic Obstructive", ("COPD", "Chronic obstructive pulmonary disease", "Chronic obstructive lung disease"), ("MESH:D008171",), (RESP,), "A disease of chronic diffuse irreversible airflow obstruction."),
    ("MESH:D011014", "Pneumonia", ("Lung inflammation", "Pneumonitis"), ("MESH:D008171",), (RESP, INF), "Infection of the lung often accompanied by inflammation."),
    ("MESH:D007239", "Infections", ("Infectious disease", "Infection"), ("MESH:C",), (INF,), "Invasion of the host organism by microorganisms or their toxins."),
    ("MESH:D007251", "Influenza, Human", ("Flu", "Influenza", "Grippe"), ("MESH:D007239",), (INF, RESP), "An acute viral infection in humans involving the respiratory tract."),
    ("MESH:D014376", "Tuberculosis", ("TB", "Koch's disease"), ("MESH:D007239",), (INF,), "Any of the infectious diseases of man and other animals caused by species of Mycobacterium."),
    ("MESH:D008288", "Malaria", ("Plasmodium infection", "Paludism"), ("MESH:D007239",), (INF, BLOOD), "A protozoan disease caused in humans by four species of the genus Plasmodium."),
    ("MESH:D015658", "HIV Infections", ("HIV disease", "HIV infection", "Human immunodeficiency virus infection"), ("MESH:D007239",), (INF, IMM), "Includes the spectrum of human immunodeficiency virus infections."),
    ("MESH:D004066", "Digestive System Diseases", ("Gastrointestinal disease", "Digestive disorder"), ("MESH:C",), (DIG,), "Diseases in any part of the digestive system."),
    ("MESH:D015212", "Inflammatory Bowel Diseases", ("IBD", "Inflammatory bowel disease"), ("MESH:D004066",), (DIG, IMM), "Chronic, non-specific inflammation of the gastrointestinal tract."),
    ("MESH:D003424", "Crohn Disease", ("Crohn's disease", "Regional enteritis", "Granulomatous colitis"), ("MESH:D015212",), (DIG, IMM), "A chronic transmural inflammation that may involve any part of the digestive tract."),
    ("MESH:D003093", "Colitis, Ulcerative", ("Ulcerative colitis", "UC"), ("MESH:D015212",), (DIG, IMM), "Inflammation of the colon that is predominantly confined to the mucosa."),
    ("MESH:D008107", "Liver Diseases", ("Hepatic disease", "Liver disorder"), ("MESH:D004066",), (DIG,), "Pathological processes of the liver."),
    ("MESH:D008103", "Liver Cirrhosis", ("Cirrhosis", "Hepatic cirrhosis"), ("MESH:D008107",), (DIG,), "Liver disease in which the normal microcirculation is destroyed and replaced by fibrous septa."),
    ("MESH:D006526", "Hepatitis C", ("HCV infection", "Hepatitis C virus infection"), ("MESH:D008107", "MESH:D007239"), (DIG, INF), "Inflammation of the liver in humans caused by the hepatitis C virus."),
    ("MESH:D009140", "Musculoskeletal Diseases", ("Musculoskeletal disorder",), ("MESH:C",), (MSK,), "Diseases of the muscles and their associated ligaments and other connective tissue and of the bones."),
    ("MESH:D001168", "Arthritis", ("Joint inflammation", "Arthritides"), ("MESH:D009140",), (MSK,), "Acute or chronic inflammation of joints."),
    ("MESH:D001172", "Arthritis, Rheumatoid", ("Rheumatoid arthritis", "RA"), ("MESH:D001168",), (MSK, IMM), "A chronic systemic disease, primarily of the joints, marked by inflammatory changes in the synovial membranes."),
    ("MESH:D010003", "Osteoarthritis", ("Degenerative arthritis", "Osteoarthrosis", "OA"), ("MESH:D001168",), (MSK,), "A progressive, degenerative joint disease."),
    ("MESH:D001327", "Autoimmune Diseases", ("Autoimmune disorder",), ("MESH:C",), (IMM,), "Disorders that are characterized by the production of antibodies that react with host tissues."),
    ("MESH:D008180", "Lupus Erythematosus, Systemic", ("Systemic lupus erythematosus", "SLE", "Lupus"), ("MESH:D001327",), (IMM, MSK), "A chronic, relapsing, inflammatory, and often febrile multisystemic disorder of connective tissue."),
    ("MESH:D006402", "Hematologic Diseases", ("Blood disease", "Hematological disorder"), ("MESH:C",), (BLOOD,), "Disorders of the blood and blood forming tissues."),
    ("MESH:D000740", "Anemia", ("Anaemia",), ("MESH:D006402",), (BLOOD,), "A reduction in the number of circulating erythrocytes or in the quantity of hemoglobin."),
    ("MESH:D000755", "Anemia, Sickle Cell", ("Sickle cell disease", "Sickle cell anemia", "SCD"), ("MESH:D000740", "MESH:D030342"), (BLOOD, GEN), "A disease characterized by chronic hemolytic anemia caused by hemoglobin S."),
    ("MESH:D007674", "Kidney Diseases", ("Renal disease", "Nephropathy"), ("MESH:C",), (URO,), "Pathological processes of the kidney or its component tissues."),
    ("MESH:D051436", "Renal Insufficiency, Chronic", ("Chronic kidney disease", "CKD", "Chronic renal failure"), ("MESH:D007674",), (URO,), "Conditions in which the kidneys perform below the normal level for more than three months."),
    ("MESH:D009750", "Nutritional and Metabolic Diseases", ("Metabolic disorder",), ("MESH:C",), (MET,), "A collective term for nutritional disorders and metabolic diseases."),
    ("MESH:D003920", "Diabetes Mellitus", ("Diabetes", "DM"), ("MESH:D009750",), (MET, ENDO), "A heterogeneous group of disorders characterized by hyperglycemia and glucose intolerance."),
    ("MESH:D003922", "Diabetes Mellitus, Type 1", ("Type 1 diabetes", "Insulin-dependent diabetes mellitus", "IDDM", "Juvenile-onset diabetes"), ("MESH:D003920",), (MET, ENDO, IMM), "A subtype of diabetes mellitus characterized by insulin deficiency."),
    ("MESH:D003924", "Diabetes Mellitus, Type 2", ("Type 2 diabetes", "Non-insulin-dependent diabetes mellitus", "NIDDM", "Adult-onset diabetes"), ("MESH:D003920",), (MET, ENDO), "A subclass of diabetes mellitus that is not insulin-responsive or dependent."),
    ("MESH:D009765", "Obesity", ("Adiposity", "Corpulence"), ("MESH:D009750",), (MET,), "A status with body weight that is grossly above the acceptable or desirable weight."),
    ("MESH:D001523", "Mental Disorders", ("Psychiatric disorder", "Mental illness"), ("MESH:C",), (MENT,), "Psychiatric illness or diseases manifested by breakdowns in the adaptational process."),
    ("MESH:D003866", "Depressive Disorder", ("Depression", "Depressive syndrome"), ("MESH:D001523",), (MENT,), "An affective disorder manifested by either a dysphoric mood or loss of interest or pleasure."),
    ("MESH:D012559", "Schizophrenia", ("Dementia praecox", "Schizophrenic disorder"), ("MESH:D001523",), (MENT,), "A severe emotional disorder of psychotic depth."),
    ("MESH:D001714", "Bipolar Disorder", ("Manic depression", "Manic-depressive illness", "Bipolar affective disorder"), ("MESH:D001523",), (MENT,), "A major affective disorder marked by severe mood swings."),
]
